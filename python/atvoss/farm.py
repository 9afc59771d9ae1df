"""Serving a tuning farm from Python: ``atvoss.serve_worker`` runs a farm worker (the one
atvoss-worker runs, rpc/worker.hpp) in this process, so the backends registered here with
``atvoss.register_backend`` (written in Python) measure the farm's tasks, next to the
built-in ones. A client tunes through the farm with ``atvoss.tune(..., farm="host:port")``
(its process registers the same backend: it gives the space and the default).

    atvoss.register_backend(NumpyMatmul())
    atvoss.serve_worker("127.0.0.1:9190", ["ascend910b"], backends=["numpy-matmul"])

Docs: docs/protocol.md (the protocol and the token), docs/scaling.md, python/atvoss/backend.py.
"""
import os
from typing import Any, Dict, Optional, Sequence, Union

from . import _atvoss
from ._json import dumps
from .database import require_file
from .vocabulary import Target, as_target

TargetArg = Union[Target, str]


def serve_worker(farm: str, targets: Sequence[TargetArg], *, backends: Optional[Sequence[str]] = None,
                 slots: int = 0, token_file: Optional[Union[str, "os.PathLike[str]"]] = None,
                 name: str = "", noise: float = 0.02,
                 recorded_dirs: Sequence[Union[str, "os.PathLike[str]"]] = ()) -> int:
    """Serves the farm at farm ("host:port") until Ctrl-C, which raises KeyboardInterrupt
    (the tasks in flight are dropped; the coordinator gives them to another worker).

    targets: the targets this worker measures (presets, files, dicts, Targets). backends:
    the backend names it measures with (default: all, those registered from Python
    included). slots: tasks measured at once (0: 1, or the physical cores for the host).
    The farm token comes from token_file, else $ATVOSS_TOKEN (never an argument). name:
    shown in the farm's stats. recorded_dirs: directories whose recorded tables it serves.
    Returns the tasks measured, should the worker stop without Ctrl-C. Bad input raises
    ValueError or TypeError naming the argument; a refused login, RuntimeError."""
    if not isinstance(farm, str):
        raise TypeError(f"serve_worker: farm must be a str 'host:port', not {type(farm).__name__}")
    if isinstance(targets, (str, Target)) or not isinstance(targets, Sequence):
        raise TypeError("serve_worker: targets must be a list of targets")
    names = list(backends) if backends is not None else []
    if not all(isinstance(b, str) for b in names) or isinstance(backends, str):
        raise TypeError("serve_worker: backends must be a list of backend names")
    if isinstance(slots, bool) or not isinstance(slots, int):
        raise TypeError("serve_worker: slots must be an int")
    if token_file is not None:
        require_file(token_file, "token_file")
    options: Dict[str, Any] = {
        "farm": farm, "targets": [as_target(t)._arg() for t in targets], "backends": names, "slots": slots,
        "token_file": os.fspath(token_file) if token_file is not None else "", "name": str(name),
        "noise": float(noise), "recorded_dirs": [os.fspath(d) for d in recorded_dirs]}
    return int(_atvoss.serve_worker(dumps(options)))
