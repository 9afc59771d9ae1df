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


def _start_farm(tmp_path, *extra, stderr=subprocess.DEVNULL):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    os.chmod(token_file, 0o600)
    port_file = tmp_path / "port.json"
    proc = subprocess.Popen([os.path.join(BIN_DIR, "atvoss-farm"), "--port", "0", "--port-file", str(port_file),
                             "--token-file", str(token_file), "--db", str(tmp_path / "farm.db"), *extra],
                            stdout=subprocess.DEVNULL, stderr=stderr)
    _wait_for(port_file)
    return proc, f"127.0.0.1:{json.loads(port_file.read_text())['port']}", token_file


@pytest.fixture
def farm(tmp_path):
    proc, address, token_file = _start_farm(tmp_path)
    try:
        yield address, token_file
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


# A worker alive but silent on one item: its measure() never returns (no deadline of its own),
# while its connection keeps answering heartbeats. Only the farm's task lease can move that
# item to another worker; without it the client would wait for ever.
STUCK = BACKEND + r'''
FarmSoftmax.call_timeout_s = None
_measure = FarmSoftmax.measure
def _stuck(self, workload, target, schedule, repeat):
    with open(os.environ["MARKS"], "a") as f:
        f.write(f"{os.getpid()} {schedule['rows']}\n")
    while True:
        time.sleep(0.05)
FarmSoftmax.measure = _stuck
'''

CLIENT = BACKEND + r'''
import json, sys
r = atvoss.tune(json.loads(sys.argv[2]), json.loads(sys.argv[3]), trials=5, strategy="grid", farm=sys.argv[1],
                db=sys.argv[4])
records = atvoss.Database(sys.argv[4]).history(json.loads(sys.argv[2]), json.loads(sys.argv[3]))
print(json.dumps({"trials": r.trials, "statuses": sorted({rec["measurement"]["status"] for rec in records}), "n": len(records)}), flush=True)
'''


def _serve(code, address, token_file, marks):
    env = {**os.environ, "MARKS": str(marks)}
    proc = subprocess.Popen([sys.executable, "-c", code + WORKER[len(BACKEND):], address, json.dumps(TARGET),
                             str(token_file)], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout.readline().strip() == "serving"
    return proc


def test_the_farm_takes_back_an_item_a_live_worker_never_answers(tmp_path):
    farm_log = open(tmp_path / "farm.log", "w")
    farm_proc, address, token_file = _start_farm(tmp_path, "--task-lease-ms", "1500", stderr=farm_log)
    procs = [farm_proc]
    try:
        stuck_marks, good_marks = tmp_path / "stuck", tmp_path / "good"
        procs.append(_serve(STUCK, address, token_file, stuck_marks))
        env = {**os.environ, "ATVOSS_TOKEN": TOKEN}
        env.pop("MARKS", None)
        client = subprocess.Popen([sys.executable, "-c", CLIENT, address, json.dumps(WORKLOAD), json.dumps(TARGET),
                                   str(tmp_path / "t.db")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        procs.append(client)
        _wait_for(stuck_marks)  # the stuck worker holds an item; its one slot stays busy with it
        procs.append(_serve(BACKEND, address, token_file, good_marks))
        out, err = client.communicate(timeout=60)
        assert client.returncode == 0, err
        assert json.loads(out.splitlines()[-1]) == {"trials": 5, "statuses": ["ok"], "n": 5}
        stuck_rows = [int(v) for v in stuck_marks.read_text().split()[1::2]]
        good_rows = sorted(int(v) for v in good_marks.read_text().split()[1::2])
        assert len(stuck_rows) == 1 and stuck_rows[0] in good_rows  # the item moved, and nothing else reached it
        assert good_rows == [1, 4, 16, 64, 256]
        farm_log.flush()
        assert "within its 1500 ms lease; taking it back" in (tmp_path / "farm.log").read_text()
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.kill()
                p.wait()
        farm_log.close()


def test_serve_worker_names_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="targets"):
        atvoss.serve_worker("127.0.0.1:1", "ascend910b")
    with pytest.raises(FileNotFoundError, match="token_file"):
        atvoss.serve_worker("127.0.0.1:1", ["ascend910b"], token_file=str(tmp_path / "none"))
    with pytest.raises(ValueError, match="farm"):
        atvoss.serve_worker("nohost", ["ascend910b"])
    with pytest.raises(ValueError, match="no-such-backend"):
        atvoss.serve_worker("127.0.0.1:1", ["ascend910b"], backends=["no-such-backend"])
