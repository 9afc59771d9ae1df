"""A farm worker run from Python (atvoss.serve_worker) measures with a backend written in
Python for a client tuning through the farm: real processes on loopback (atvoss-farm, a
Python worker, this test as the client), the farm token from a file and the environment."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import atvoss
from conftest import BIN_DIR

TOKEN = "farm-worker-test-token"
TARGET = {"preset": "ascend910", "name": "numpy-farm"}
WORKLOAD = {"op": "softmax", "dims": {"M": 512, "N": 64}}

# The backend both processes register. In the worker it times a numpy softmax and notes each
# call in $MARKS; in the client it refuses to measure, so a trial measured anywhere but on
# the worker would be a runtime_error.
BACKEND = r'''
import os, time
import numpy as np
import atvoss

class FarmSoftmax(atvoss.Backend):
    name = "test-farm-softmax"
    def serves(self, workload, target):
        return workload.op == "softmax" and target.name == "numpy-farm"
    def space(self, workload, target):
        return {"rows": [1, 4, 16, 64, 256]}
    def default(self, workload, target):
        return {"rows": 1}
    def measure(self, workload, target, schedule, repeat):
        marks = os.environ.get("MARKS")
        if not marks:
            raise RuntimeError("measured in the client, not on the farm's worker")
        with open(marks, "a") as f:
            f.write(f"{os.getpid()} {schedule['rows']}\n")
        x = np.random.default_rng(0).standard_normal((workload.dims["M"], workload.dims["N"]))
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            for i in range(0, x.shape[0], schedule["rows"]):
                part = x[i:i + schedule["rows"]]
                e = np.exp(part - part.max(axis=1, keepdims=True))
                (e / e.sum(axis=1, keepdims=True))
            times.append((time.perf_counter() - start) * 1e6)
        return times

if FarmSoftmax.name not in atvoss.backend_names():
    atvoss.register_backend(FarmSoftmax())
'''

WORKER = BACKEND + r'''
import sys
print("serving", flush=True)
atvoss.serve_worker(sys.argv[1], [sys.argv[2]], backends=["test-farm-softmax"], token_file=sys.argv[3],
                    name="python-worker")
'''


def _wait_for(path, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} did not appear in {timeout} s")


@pytest.fixture
def farm(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    os.chmod(token_file, 0o600)
    port_file = tmp_path / "port.json"
    proc = subprocess.Popen([os.path.join(BIN_DIR, "atvoss-farm"), "--port", "0", "--port-file", str(port_file),
                             "--token-file", str(token_file), "--db", str(tmp_path / "farm.db")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(port_file)
        yield f"127.0.0.1:{json.loads(port_file.read_text())['port']}", token_file
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_python_backend_measures_on_a_python_worker_for_a_farm_client(farm, tmp_path, monkeypatch):
    address, token_file = farm
    marks = tmp_path / "marks"
    env = {**os.environ, "MARKS": str(marks)}
    worker = subprocess.Popen([sys.executable, "-c", WORKER, address, json.dumps(TARGET), str(token_file)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert worker.stdout.readline().strip() == "serving"
        exec(BACKEND, {})  # the client's registration: space and default, never a measurement
        monkeypatch.setenv("ATVOSS_TOKEN", TOKEN)
        monkeypatch.delenv("MARKS", raising=False)
        r = atvoss.tune(WORKLOAD, TARGET, trials=5, strategy="grid", farm=address, db=str(tmp_path / "t.db"))
        assert r.trials == 5 and r.stop_reason in ("budget", "exhausted")
        assert r.best is not None and r.best.ok
        lines = marks.read_text().split()
        pids, rows = set(lines[0::2]), sorted(int(v) for v in lines[1::2])
        assert pids == {str(worker.pid)} and rows == [1, 4, 16, 64, 256]
        # Ctrl-C stops the worker promptly, as KeyboardInterrupt.
        worker.send_signal(signal.SIGINT)
        _, err = worker.communicate(timeout=10)
        assert worker.returncode != 0 and "KeyboardInterrupt" in err
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_serve_worker_names_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="targets"):
        atvoss.serve_worker("127.0.0.1:1", "ascend910b")
    with pytest.raises(FileNotFoundError, match="token_file"):
        atvoss.serve_worker("127.0.0.1:1", ["ascend910b"], token_file=str(tmp_path / "none"))
    with pytest.raises(ValueError, match="farm"):
        atvoss.serve_worker("nohost", ["ascend910b"])
    with pytest.raises(ValueError, match="no-such-backend"):
        atvoss.serve_worker("127.0.0.1:1", ["ascend910b"], backends=["no-such-backend"])
