"""atvoss.Client against a real `atvoss-db serve` process on loopback: /v1/best agrees
with the database, /v1/stats answers, the token comes from the environment or a file,
and a missing or wrong token is refused (401)."""
import os
import socket
import subprocess
import time

import pytest

import atvoss
from conftest import BIN_DIR

TOKEN = "python-client-test-token"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(matmul, db_path):
    atvoss.tune(matmul, "ascend910b", trials=12, strategy="random", db=db_path, seed=9, batch_size=6)
    port = free_port()
    env = {**os.environ, "ATVOSS_TOKEN": TOKEN}
    proc = subprocess.Popen([os.path.join(BIN_DIR, "atvoss-db"), "--db", db_path, "serve", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    address = f"127.0.0.1:{port}"
    client = atvoss.Client(address, token=TOKEN)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.stats()
            break
        except (OSError, RuntimeError):
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("atvoss-db serve did not answer: " + proc.stderr.read().decode())
            time.sleep(0.05)
    yield address, db_path
    proc.terminate()
    assert proc.wait(10) == 0


def test_best_and_stats_with_the_token_from_the_environment(server, matmul, monkeypatch):
    address, db_path = server
    monkeypatch.setenv("ATVOSS_TOKEN", TOKEN)
    client = atvoss.Client(address)
    answer = client.best(matmul, "ascend910b")
    expected = atvoss.Database(db_path).best(matmul, "ascend910b")[0]
    assert answer["match"] == "exact"
    assert answer["schedule"] == expected["schedule"]
    assert answer["time_us"] == expected["measurement"]["time_us"]
    assert client.best(matmul, atvoss.Target("ascend910b"))["schedule"] == expected["schedule"]
    stats = client.stats()
    local = atvoss.Database(db_path).stats()
    assert stats["records"] == local["records"] == 12 and stats["by_status"] == local["by_status"]


def test_token_from_a_file_and_refusals(server, matmul, tmp_path, monkeypatch):
    address, _ = server
    monkeypatch.delenv("ATVOSS_TOKEN", raising=False)
    token_file = tmp_path / "farm.token"
    token_file.write_text(TOKEN + "\n")
    assert atvoss.Client(address, token_file=str(token_file)).best(matmul, "ascend910b")["match"] == "exact"
    with pytest.raises(RuntimeError, match="401"):
        atvoss.Client(address).best(matmul, "ascend910b")
    with pytest.raises(RuntimeError, match="401"):
        atvoss.Client(address, token="wrong").stats()
    with pytest.raises(ValueError, match="host:port"):
        atvoss.Client("nohost")
