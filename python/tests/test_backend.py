"""Backends written in Python (atvoss.Backend, atvoss.register_backend): tune, measure and a
job spec go through one; its failures stay its candidates'."""
import time

import numpy as np
import pytest

import atvoss

TARGET = {"preset": "ascend910", "name": "numpy-cpu"}
ROWS = {"op": "softmax", "dims": {"M": 2048, "N": 256}}


def softmax_in_chunks(x, rows):
    out = np.empty_like(x)
    for i in range(0, x.shape[0], rows):
        part = x[i:i + rows]
        e = np.exp(part - part.max(axis=1, keepdims=True))
        out[i:i + rows] = e / e.sum(axis=1, keepdims=True)
    return out


class NumpySoftmax(atvoss.Backend):
    """A real Python-timed kernel: softmax over rows, `rows` rows per numpy call."""

    name = "test-numpy-softmax"
    calls = 0

    def serves(self, workload, target):
        return workload.op == "softmax" and target.name == "numpy-cpu"

    def space(self, workload, target):
        return {"rows": [1, 2, 4, 8, 16, 64, 256, 1024], "unused": [0, 1]}

    def check(self, workload, target, schedule):
        return "a chunk of 1024 rows is refused here" if schedule["rows"] == 1024 else None

    def default(self, workload, target):
        return {"rows": 1, "unused": 0}

    def measure(self, workload, target, schedule, repeat):
        type(self).calls += 1
        if schedule["rows"] == 2:
            raise RuntimeError("two rows crash this kernel")
        m, n = workload.dims["M"], workload.dims["N"]
        x = np.random.default_rng(0).standard_normal((m, n))
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            y = softmax_in_chunks(x, schedule["rows"])
            times.append((time.perf_counter() - start) * 1e6)
        assert np.allclose(y.sum(axis=1), 1.0)
        return times


@pytest.fixture(scope="module")
def numpy_backend():
    if NumpySoftmax.name not in atvoss.backend_names():
        atvoss.register_backend(NumpySoftmax())
    return NumpySoftmax


def test_tune_measures_through_a_python_backend(numpy_backend, tmp_path):
    db = tmp_path / "py-backend.db"
    before = numpy_backend.calls
    r = atvoss.tune(ROWS, TARGET, trials=10, strategy="random", db=db, seed=1)
    assert numpy_backend.calls - before >= 9  # every trial (and the default) ran the Python kernel
    assert r.best_schedule["rows"] not in (2, 1024)
    assert r.best_us < r.default_us  # one row per numpy call is the slowest way
    stored = atvoss.Database(db).query(target="numpy-cpu")
    statuses = {row["schedule"]["rows"]: row["measurement"]["status"] for row in stored}
    assert all(statuses[rows] == "ok" for rows in statuses if rows not in (2, 1024))
    if 2 in statuses:
        assert statuses[2] == "runtime_error"
    # measure() goes through it too, and an invalid schedule is the backend's own verdict.
    m = atvoss.measure(ROWS, TARGET, [{"rows": 64, "unused": 0}, {"rows": 1024, "unused": 0}], repeat=2)
    assert m[0].ok and m[0].time_us > 0
    assert m[1].status == "invalid" and "1024 rows is refused" in m[1].message


def test_a_failing_measure_is_the_candidates_error(numpy_backend):
    m = atvoss.measure(ROWS, TARGET, [{"rows": 2, "unused": 0}])[0]
    assert m.status == "runtime_error" and "two rows crash this kernel" in m.message


def test_registration_is_checked():
    class NoMeasure(atvoss.Backend):
        name = "test-no-measure"

        def serves(self, workload, target):
            return False

        def space(self, workload, target):
            return {"x": [1]}

    with pytest.raises(TypeError, match="NoMeasure does not define measure"):
        atvoss.register_backend(NoMeasure())
    with pytest.raises(TypeError, match="instance of a subclass"):
        atvoss.register_backend(NoMeasure)

    class Unnamed(NoMeasure):
        name = ""

        def measure(self, workload, target, schedule, repeat):
            return 1.0

    with pytest.raises(TypeError, match="name must be a non-empty str"):
        atvoss.register_backend(Unnamed())
    assert "test-no-measure" not in atvoss.backend_names()


def test_a_name_cannot_be_registered_twice(numpy_backend):
    with pytest.raises(ValueError, match="test-numpy-softmax"):
        atvoss.register_backend(NumpySoftmax())



def test_a_job_spec_measures_through_a_python_backend(numpy_backend, tmp_path):
    # The job's report lowered every chosen schedule with the NPU templates ("schedule has
    # no knob 'tile_m'"); it now asks the backend, which has no lowering here.
    before = numpy_backend.calls
    spec = {"name": "numpy-job", "target": TARGET, "workloads": [{"workload": ROWS}], "trials": 6,
            "strategy": "random", "batch_size": 3, "seed": 2, "database": str(tmp_path / "job.db"),
            "export": str(tmp_path / "table.json"), "report": str(tmp_path / "report.html")}
    summary = atvoss.run_job(spec)
    assert summary["measured"] == 6
    assert numpy_backend.calls - before >= 6
    assert 0 < summary["tasks"][0]["chosen_us"]


class NoisySoftmax(NumpySoftmax):
    """The same kernel, declared noisy (timed on real hardware): tune confirms its winner."""

    name = "test-noisy-softmax"
    noisy = True

    def serves(self, workload, target):
        return workload.op == "softmax" and target.name == "numpy-noisy"


def test_a_noisy_backend_gets_its_winner_confirmed(numpy_backend, tmp_path):
    plain = atvoss.tune(ROWS, TARGET, trials=6, strategy="grid", seed=1)
    assert (plain.confirmed, plain.pick_changed) == (0, False)  # not noisy: nothing re-measured
    if NoisySoftmax.name not in atvoss.backend_names():
        atvoss.register_backend(NoisySoftmax())
    db = str(tmp_path / "noisy.db")
    r = atvoss.tune(ROWS, {**TARGET, "name": "numpy-noisy"}, trials=8, strategy="grid", seed=1, db=db)
    ok = atvoss.Database(db).stats()["by_status"]["ok"]
    assert ok >= 5 and r.confirmed == 5 and isinstance(r.pick_changed, bool)  # the 5 fastest ok ones

    class Unsure(NoisySoftmax):
        name = "test-unsure"
        noisy = "yes"

    with pytest.raises(TypeError, match="noisy"):
        atvoss.register_backend(Unsure())


class Hangs(atvoss.Backend):
    """measure() never returns for rows 8 (a Python loop, as a hung kernel wrapper would spin)."""

    name = "test-hangs"
    call_timeout_s = 0.3

    def serves(self, workload, target):
        return workload.op == "softmax" and target.name == "hangs-cpu"

    def space(self, workload, target):
        return {"rows": [1, 8]}

    def default(self, workload, target):
        return {"rows": 1}

    def measure(self, workload, target, schedule, repeat):
        while schedule["rows"] == 8:
            pass
        return 5.0


@pytest.fixture(scope="module")
def hanging_backend():
    if Hangs.name not in atvoss.backend_names():
        atvoss.register_backend(Hangs())
    return Hangs


HANGS = {"preset": "ascend910", "name": "hangs-cpu"}


def test_a_measure_past_the_backends_call_timeout_is_a_timeout(hanging_backend):
    started = time.monotonic()
    fine, hung = atvoss.measure(ROWS, HANGS, [{"rows": 1}, {"rows": 8}])
    assert fine.ok and fine.time_us == 5.0
    assert hung.status == "timeout" and "did not return within 0.3 s" in hung.message
    assert time.monotonic() - started < 5


def test_ctrl_c_stops_a_hung_python_measure(hanging_backend, monkeypatch):
    import os
    import signal
    import threading

    monkeypatch.setattr(Hangs, "call_timeout_s", None)  # only Ctrl-C can stop it now
    timer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        atvoss.tune(ROWS, HANGS, trials=4, strategy="grid")
    timer.join()
    assert time.monotonic() - started < 2.0, "Ctrl-C did not stop the hung measure within about 0.1 s"
