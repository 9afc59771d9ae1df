"""Query client for the HTTP endpoint of a tuning farm (--http-port) or ``atvoss-db serve``
(docs/protocol.md): GET /v1/best and /v1/stats with a bearer token. Pure Python (urllib).
The token comes from the token argument, a token file, or the ATVOSS_TOKEN environment
variable, so it never has to be written into source code.
"""
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Optional, Union

from .database import _resolved_target
from .vocabulary import Target, as_workload


class Client:
    """``Client("127.0.0.1:9191")`` (token from ATVOSS_TOKEN) or
    ``Client(address, token_file="farm.token")``. HTTP errors raise RuntimeError with the
    status and the server's message; 401 means a missing or wrong token."""

    def __init__(self, address: str, token: Optional[str] = None, token_file: Optional[str] = None,
                 timeout: float = 10.0) -> None:
        if not isinstance(address, str) or ":" not in address:
            raise ValueError(f"address must be 'host:port', got {address!r}")
        self.base = address if address.startswith("http") else "http://" + address
        if token is None and token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        if token is None:
            token = os.environ.get("ATVOSS_TOKEN")
        self._token = token
        self.timeout = timeout

    def _get(self, path: str) -> Any:
        request = urllib.request.Request(self.base + path)
        if self._token:
            request.add_header("Authorization", "Bearer " + self._token)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                return json.loads(reply.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            body = e.read().decode("utf-8", "replace")
            raise RuntimeError(f"{path.split('?')[0]}: HTTP {e.code}: {body}") from None

    def best(self, workload: Any, target: Union[Target, str]) -> Dict[str, Any]:
        """{"schedule", "time_us", "match": "exact"|"nearest", ...} for workload on target
        (a Target or its name)."""
        name = target.name if isinstance(target, Target) else target
        if not isinstance(name, str):
            raise TypeError("target must be a Target or a target name")
        w = json.dumps(as_workload(workload, _resolved_target(target)).to_json(), separators=(",", ":"))
        query = urllib.parse.urlencode({"target": name, "workload": w})
        return self._get("/v1/best?" + query)

    def stats(self) -> Dict[str, Any]:
        """The server's /v1/stats answer."""
        return self._get("/v1/stats")

    def __repr__(self) -> str:
        return f"Client({self.base!r})"
