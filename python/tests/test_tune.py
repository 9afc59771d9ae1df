"""atvoss.tune and atvoss.run_job: results that agree with the database, resume, progress,
Ctrl-C (KeyboardInterrupt) leaving a resumable database, bad input, GIL released."""
import json
import math
import os
import signal
import threading
import time

import pytest

import atvoss
from conftest import MATMUL


def test_tune_returns_best_curve_and_stop_reason(matmul, db_path):
    r = atvoss.tune(matmul, "ascend910b", trials=20, strategy="random", db=db_path, seed=1, batch_size=8)
    assert r.trials == 20 and r.measured == 20 and r.resumed == 0 and r.stop_reason == "budget"
    assert len(r.curve) == 20 and r.curve[-1] == r.best_us
    assert all(a >= b for a, b in zip(r.curve, r.curve[1:]))  # best so far never rises
    assert r.best_us <= r.default_us < math.inf and r.speedup >= 1
    assert r.best.ok and r.best.time_us == r.best_us
    best = atvoss.Database(db_path).best(matmul, "ascend910b", k=1)[0]
    assert atvoss.Schedule(best["schedule"]) == r.best_schedule
    assert best["measurement"]["time_us"] == r.best_us


def test_tune_resumes_from_the_database(matmul, db_path):
    atvoss.tune(matmul, "ascend910b", trials=12, strategy="random", db=db_path, seed=2, batch_size=4)
    r = atvoss.tune(matmul, "ascend910b", trials=20, strategy="random", db=db_path, seed=2, batch_size=4)
    assert (r.resumed, r.measured, r.trials) == (12, 8, 20)


def test_progress_is_called_every_trial(matmul):
    seen = []
    r = atvoss.tune(matmul, "ascend910b", trials=12, strategy="random", seed=3, batch_size=5, progress=seen.append)
    assert [p["trials"] for p in seen] == list(range(1, 13))
    assert all(p["budget"] == 12 for p in seen)
    best = math.inf
    for p in seen:
        m = p["measurement"]
        assert isinstance(p["schedule"], atvoss.Schedule) and m.schedule == p["schedule"]
        best = min(best, m.time_us) if m.ok else best
        assert p["best_us"] == best
    assert best == r.best_us and seen[-1]["default_us"] == r.default_us


def test_job_progress_and_profiler_see_every_trial_of_every_task(tmp_path):
    small = {"op": "matmul", "dims": {"M": 128, "N": 128, "K": 128}}
    spec = {"name": "progress", "target": "ascend910b", "workloads": [{"workload": MATMUL}, {"workload": small}],
            "trials": 24, "strategy": "random", "batch_size": 4, "seed": 2, "database": str(tmp_path / "j.db"),
            "export": str(tmp_path / "t.json"), "report": str(tmp_path / "r.html")}
    seen = []
    with atvoss.Profiler() as p:
        summary = atvoss.run_job(spec, progress=seen.append)
    assert [s["trials"] for s in seen] == list(range(1, summary["measured"] + 1))
    assert {s["workload"] for s in seen} == {atvoss.Workload(MATMUL), atvoss.Workload(small)}
    assert all(s["budget"] == 24 for s in seen)
    assert [r.source for r in p.records] == ["job"] * len(seen)
    assert [r.measurement for r in p.records] == [s["measurement"] for s in seen]


def test_progress_exception_propagates(matmul):
    def boom(p):
        raise ZeroDivisionError("from progress")

    with pytest.raises(ZeroDivisionError, match="from progress"):
        atvoss.tune(matmul, "ascend910b", trials=8, strategy="random", batch_size=4, progress=boom)


# Slow enough on one core (about 2 GFLOP a run) that a kernel is in flight when Ctrl-C comes.
HOST_SLOW = {"op": "matmul", "dims": {"M": 1024, "N": 1024, "K": 1024}}


def _interrupt_in(seconds):
    timer = threading.Timer(seconds, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def test_host_workloads_default_to_float32(matmul):
    assert matmul.to_json()["dtype"] == "float16"  # the NPU's default
    host = atvoss.Target("host")
    assert matmul.for_target(host).to_json()["dtype"] == "float32"
    assert matmul.for_target(atvoss.Target("ascend910b")) is matmul
    given = atvoss.Workload({**MATMUL, "dtype": "float16"})
    assert given.for_target(host) is given  # a dtype the user gave is kept (and refused by host)
    assert atvoss.ScheduleSpace.of(MATMUL, "host").size > 0
    with pytest.raises(ValueError, match="dtype"):
        atvoss.ScheduleSpace.of(given, "host")


def test_ctrl_c_on_host_kills_the_kernels_in_flight_and_keeps_every_finished_trial(db_path):
    # The goal (docs/decisions/python-cancel.md): Ctrl-C takes effect within 1 s on host (it took up to a round, 11 s).
    finished = []
    signalled = []

    def progress(p):
        finished.append(p)
        if len(finished) == 2:
            signalled.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        atvoss.tune(HOST_SLOW, "host", trials=40, strategy="random", db=db_path, seed=7, batch_size=8,
                    progress=progress)
    stopped = time.monotonic()
    assert signalled and stopped - signalled[0] < 1.0, f"stopped {stopped - signalled[0]:.2f} s after Ctrl-C"
    # Every trial reported as finished is stored (those of the round in flight included), nothing else.
    records = atvoss.Database(db_path).stats()["records"]
    assert records == len(finished) >= 2
    r = atvoss.tune(HOST_SLOW, "host", trials=len(finished), strategy="random", db=db_path, seed=7)
    assert r.resumed == len(finished) and r.measured == 0


def test_measure_interrupted_returns_what_finished():
    schedules = [atvoss.ScheduleSpace.of(HOST_SLOW, "host").default()] * 3
    timer = _interrupt_in(0.5)
    started = time.monotonic()
    # 50 timed repeats of a ~10 ms kernel keep each measurement running past the Ctrl-C even
    # when its kernel is already in the compile cache (with 3 repeats, all three could finish
    # within the 0.5 s on a quiet machine, and nothing was interrupted).
    with pytest.warns(RuntimeWarning, match="interrupted"):
        out = atvoss.measure(HOST_SLOW, "host", schedules, repeat=50)
    timer.join()
    assert time.monotonic() - started < 0.5 + 1.0
    assert len(out) == 3 and [m.schedule for m in out] == schedules
    assert all(m.ok or (m.status == "error" and m.message == "cancelled by the caller") for m in out)
    assert not out[-1].ok


def _interrupt_main_when(event):
    event.wait(30)
    os.kill(os.getpid(), signal.SIGINT)


def test_ctrl_c_stops_between_rounds_and_the_database_resumes(matmul, db_path):
    # The signal arrives while the main thread is inside C++ with no Python callback, so
    # only the per-round PyErr_CheckSignals can turn it into KeyboardInterrupt.
    rounds = threading.Event()
    db = atvoss.Database(db_path)
    watcher = threading.Thread(target=_interrupt_main_when, args=(rounds,))
    watcher.start()
    poller_done = threading.Event()

    def poll():
        while not poller_done.is_set():
            if db.stats()["records"] > 0:
                rounds.set()
                return
            time.sleep(0.01)

    poller = threading.Thread(target=poll)
    poller.start()
    budget = 100000
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        atvoss.tune(matmul, "ascend910b", trials=budget, strategy="random", db=db_path, seed=4, batch_size=4)
    poller_done.set()
    poller.join()
    watcher.join()
    assert time.monotonic() - started < 60
    stored = atvoss.Database(db_path).stats()["records"]
    assert 0 < stored < budget
    # Not run to the end of the space (10260 valid points) and interrupted only afterwards:
    # resuming still has schedules to measure.
    assert atvoss.Database(db_path).check() == "ok"
    r = atvoss.tune(matmul, "ascend910b", trials=stored + 4, strategy="random", db=db_path, seed=4, batch_size=4)
    assert r.resumed == stored and r.measured == 4



def test_ctrl_c_stops_a_job_between_rounds_and_the_job_resumes(tmp_path):
    # As for tune: the SIGINT lands while run_job is in C++; only the job runner's per-round
    # hook can raise it. Then the same spec resumes, and no schedule is measured twice.
    import sqlite3

    db_path = str(tmp_path / "job.db")
    budget = 100000
    spec = {"name": "ctrl-c", "target": "ascend910b", "workloads": [{"workload": MATMUL}],
            "trials": budget, "strategy": "random", "batch_size": 4, "seed": 5, "database": db_path,
            "export": str(tmp_path / "table.json"), "report": str(tmp_path / "report.html")}
    rounds = threading.Event()
    watcher = threading.Thread(target=_interrupt_main_when, args=(rounds,))
    watcher.start()
    poller_done = threading.Event()

    def poll():
        while not poller_done.is_set():
            if os.path.exists(db_path) and atvoss.Database(db_path).stats()["records"] > 0:
                rounds.set()
                return
            time.sleep(0.01)

    poller = threading.Thread(target=poll)
    poller.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        atvoss.run_job(spec)
    poller_done.set()
    poller.join()
    watcher.join()
    assert time.monotonic() - started < 60
    db = atvoss.Database(db_path)
    stored = db.stats()["records"]
    assert 0 < stored < budget and db.check() == "ok"
    with sqlite3.connect(db_path) as c:
        assert c.execute("SELECT state FROM jobs WHERE name = 'ctrl-c'").fetchone() == ("stopped",)
    again = atvoss.run_job({**spec, "trials": stored + 8})
    assert (again["resumed"], again["measured"], again["trials"]) == (stored, 8, stored + 8)
    schedules = [str(sorted(r["schedule"].items())) for r in atvoss.Database(db_path).history(MATMUL)]
    assert len(schedules) == stored + 8 and len(set(schedules)) == len(schedules)

def tick_for(seconds, until=lambda ticks: False):
    """Ticks every millisecond (as the machine allows) for `seconds` or until `until`."""
    ticks = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not until(ticks):
        ticks.append(time.monotonic())
        time.sleep(0.001)
    return ticks


def test_tune_releases_the_gil():
    # tune runs in a thread, again and again, while the main thread ticks. A tick can only land
    # inside the C++ part of a tune call if the call let go of the GIL (the Python around it
    # lets a few in either way). The rate of ticks inside calls is compared with the rate the
    # main thread reaches alone, measured first, so a loaded machine that ticks slowly still
    # tells a released GIL (rates alike) from a held one (a small fraction).
    big = atvoss.Workload(op="matmul", dims={"M": 2048, "N": 2048, "K": 2048})
    alone = tick_for(0.3)
    alone_rate = len(alone) / (alone[-1] - alone[0])
    calls = []
    stop = threading.Event()

    def tune_until_stopped():
        while not stop.is_set():
            begin = time.monotonic()
            atvoss.tune(big, "ascend910b", trials=3000, strategy="random", batch_size=64)
            calls.append((begin, time.monotonic()))

    worker = threading.Thread(target=tune_until_stopped)
    worker.start()
    try:
        ticks = tick_for(30, until=lambda _: sum(end - begin for begin, end in list(calls)) >= 1.0)
    finally:
        stop.set()
        worker.join()
    in_calls = sum(end - begin for begin, end in calls)
    inside = sum(1 for t in ticks if any(begin < t < end for begin, end in calls))
    assert in_calls >= 0.3, f"tune calls lasted {in_calls:.3f} s: too short to tell"
    assert inside / in_calls >= 0.3 * alone_rate, (inside, in_calls, len(calls), alone_rate)


@pytest.mark.parametrize("kwargs, exc, field", [
    ({"trials": 0}, ValueError, "trials"),
    ({"trials": "5"}, TypeError, "trials"),
    ({"strategy": "no-such"}, ValueError, "no-such"),
    ({"strategy": 3}, TypeError, "strategy"),
    ({"repeat": 0}, ValueError, "repeat"),
    ({"cost_model": "bogus", "strategy": "model-guided"}, ValueError, "bogus"),
    ({"progress": 5}, TypeError, "progress"),
    # Past the C++ types these wrapped: 2**32+4 trials ran 4, seed 2**64 ran as seed 0.
    ({"trials": 2**32 + 4}, ValueError, "trials must be in 1..2147483647"),
    ({"seed": 2**64}, ValueError, "seed must be in 0..18446744073709551615"),
    ({"batch_size": 2**31}, ValueError, "batch_size"),
    ({"strategy_config": {"tpe_gamma": 0.3}}, ValueError, "random strategy_config: unknown field 'tpe_gamma'"),
    ({"strategy": "tpe", "strategy_config": {"tpe_gamma": 2}}, ValueError, r"'tpe_gamma' must be in \(0, 1\]"),
    ({"strategy_config": ["x"]}, TypeError, "strategy_config"),
])
def test_tune_bad_input(matmul, tmp_path, kwargs, exc, field):
    args = {"trials": 4, "strategy": "random", "db": str(tmp_path / "x.db")}
    args.update(kwargs)
    with pytest.raises(exc, match=field):
        atvoss.tune(matmul, "ascend910b", **args)


def test_strategy_config_reaches_the_strategy(matmul):
    # A longer random start changes which schedules TPE measures; the same config repeats them
    # (in the order trials finish, which threads decide: compared as sets).
    def measured(config):
        seen = []
        atvoss.tune(matmul, "ascend910b", trials=12, strategy="tpe", seed=2, batch_size=4,
                    strategy_config=config, progress=lambda p: seen.append(json.dumps(p["schedule"].to_json(),
                                                                                      sort_keys=True)))
        return sorted(seen)
    assert measured({"tpe_startup": 2}) == measured({"tpe_startup": 2})
    assert measured({"tpe_startup": 2}) != measured({"tpe_startup": 12})


def test_a_result_no_faster_than_the_default_warns(matmul):
    with pytest.warns(RuntimeWarning, match=r"not faster than the default"):
        r = atvoss.tune(matmul, "ascend910b", trials=1, strategy="random")  # the default alone
    assert r.best_us == r.default_us


def test_errors_name_the_python_argument_and_use_built_in_types(matmul, tmp_path):
    # They named the command-line flags (--db:, --export:) and raised RuntimeError.
    with pytest.raises(ValueError, match=r"^db: .*does not exist"):
        atvoss.tune(matmul, "ascend910b", trials=1, db=str(tmp_path / "no" / "x.db"))
    with pytest.raises(ValueError, match=r"^export: .*does not exist"):
        atvoss.tune(matmul, "ascend910b", trials=1, export=str(tmp_path / "no" / "t.json"))
    with pytest.raises(FileNotFoundError, match="job spec: no such file"):
        atvoss.run_job(str(tmp_path / "job.json"))
    with pytest.raises(FileNotFoundError, match="import_: no such file"):
        atvoss.Database(tmp_path / "x.db").import_(tmp_path / "records.jsonl")


def test_bad_target_creates_no_database(matmul, tmp_path):
    with pytest.raises(ValueError):
        atvoss.tune(matmul, "no-such-chip", trials=4, db=str(tmp_path / "x.db"))
    assert not (tmp_path / "x.db").exists()


def test_run_job_from_a_dict_and_resume(tmp_path):
    spec = {"name": "pyjob", "target": "ascend910b", "workloads": [{"workload": MATMUL, "weight": 2}],
            "trials": 12, "strategy": "random", "batch_size": 4, "seed": 1,
            "database": str(tmp_path / "job.db"), "export": str(tmp_path / "table.json"),
            "report": str(tmp_path / "report.html")}
    summary = atvoss.run_job(spec)
    assert summary["job"] == "pyjob" and summary["trials"] == 12 and summary["measured"] == 12
    assert 0 < summary["tuned_us"] <= summary["default_us"]
    assert os.path.exists(tmp_path / "table.json") and os.path.exists(tmp_path / "report.html")
    again = atvoss.run_job(spec)
    assert again["measured"] == 0 and again["resumed"] == 12


def test_run_job_from_a_file_and_bad_spec(tmp_path):
    import json

    path = tmp_path / "job.json"
    path.write_text(json.dumps({"name": "f", "target": "ascend910b", "workloads": [{"workload": MATMUL}],
                                "trials": 4, "strategy": "random", "database": str(tmp_path / "f.db"),
                                "export": str(tmp_path / "t.json"), "report": str(tmp_path / "r.html")}))
    assert atvoss.run_job(str(path))["trials"] == 4
    with pytest.raises(ValueError, match="trials"):
        atvoss.run_job({"name": "bad", "target": "ascend910b", "workloads": [{"workload": MATMUL}]})
    with pytest.raises(TypeError):
        atvoss.run_job(42)


def test_the_winner_is_confirmed_side_by_side(matmul, db_path):
    r = atvoss.tune(matmul, "ascend910b", trials=12, strategy="random", seed=1, batch_size=4)
    assert (r.confirmed, r.pick_changed) == (0, False)  # a simulator repeats itself: no confirmation
    r = atvoss.tune(matmul, "ascend910b", trials=12, strategy="random", seed=1, batch_size=4, confirm_top=3,
                    db=db_path)
    assert r.confirmed == 3 and r.pick_changed is False and r.trials == 12
    host = atvoss.tune({"op": "matmul", "dims": {"M": 64, "N": 64, "K": 64}}, "host", trials=6, strategy="random",
                       seed=1)
    assert host.confirmed == 5 and isinstance(host.pick_changed, bool)
    with pytest.raises(ValueError, match="confirm_top"):
        atvoss.tune(matmul, "ascend910b", trials=2, confirm_top=-1)


def test_queries_with_the_dict_tuned_on_host_find_its_records(tmp_path):
    # tune stores a host workload given without a dtype as float32; the queries apply the
    # same default for the same target, so the dict the user tuned with finds its records.
    db, table = str(tmp_path / "host.db"), str(tmp_path / "host-table.json")
    w = {"op": "matmul", "dims": {"M": 16, "N": 16, "K": 16}}
    atvoss.tune(w, "host", trials=2, strategy="random", db=db, seed=1, export=table)
    d = atvoss.Database(db)
    assert len(d.history(w, "host")) >= 1
    assert d.best(w, "host")[0]["workload"]["dtype"] == "float32"
    assert d.query(target="host", workload=w)
    assert atvoss.Table(table).lookup(w).match == "exact"
