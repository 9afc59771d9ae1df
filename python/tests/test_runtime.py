"""atvoss.runtime: numpy in, numpy out, against numpy's own matmul; the tuned schedule for the
shape called (exact), the nearest tuned shape's, or the default, and the reason; bad arrays are
TypeError/ValueError naming the argument; the GIL is released while a kernel runs."""
import json
import os
import threading
import time

import numpy as np
import pytest

import atvoss
import atvoss.runtime as rt

TUNED = {"op": "matmul", "dtype": "float32", "dims": {"M": 24, "N": 40, "K": 36}}


def random(shape, seed):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def assert_close(got, want):
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.max(np.abs(got - want) / np.maximum(np.abs(want), 1)) <= 1e-4


@pytest.fixture(scope="module")
def tuned_table(tmp_path_factory):
    """The full loop: tune one host workload, export the table (trials kept tiny)."""
    d = tmp_path_factory.mktemp("runtime")
    table = str(d / "table.json")
    result = atvoss.tune(TUNED, "host", trials=4, strategy="random", seed=1, db=str(d / "t.db"), export=table)
    return table, result


def test_matmul_without_table_matches_numpy_and_says_default():
    a, b = random((13, 29), 1), random((29, 37), 2)
    c, choice = rt.matmul(a, b, return_choice=True)
    assert_close(c, a @ b)
    assert choice.kind == "default" and choice.reason == "no table loaded" and choice.entry is None
    assert isinstance(choice.schedule, atvoss.Schedule) and "micro_m" in choice.schedule


def test_epilogues_and_batches_match_numpy():
    r = rt.Runtime()
    a, b, bias, res = random((9, 20), 3), random((20, 17), 4), random((17,), 5), random((9, 17), 6)
    assert_close(r.matmul(a, b, ["bias", "relu"], bias=bias), np.maximum(a @ b + bias, 0))
    assert_close(r.matmul(a, b, ["add"], residual=res), a @ b + res)
    scale, shift = random((17,), 7) + 2, random((17,), 8)
    assert_close(r.matmul(a, b, ["batchnorm"], scale=scale, shift=shift), (a @ b) * scale + shift)
    ba, bb = random((3, 5, 12), 9), random((3, 12, 7), 10)
    assert_close(r.matmul(ba, bb), np.matmul(ba, bb))
    # A PRelu's slopes (each column's), and the error naming the slope where none is given.
    slope = random((17,), 12)
    y = a @ b + bias
    assert_close(r.matmul(a, b, ["bias", "leaky_relu"], bias=bias, slope=slope), np.where(y < 0, y * slope, y))
    with pytest.raises(ValueError, match="slope"):
        r.matmul(a, b, ["leaky_relu"])
    with pytest.raises(ValueError, match="slope"):
        r.matmul(a, b, ["relu"], slope=slope)
    # A strided view is copied, not misread.
    wide = random((20, 34), 11)
    assert_close(r.matmul(a, wide[:, ::2]), a @ wide[:, ::2])


def test_tuned_table_picks_exact_then_nearest_then_default(tuned_table):
    table, result = tuned_table
    r = rt.Runtime(table)
    assert r.no_table_reason == ""
    a, b = random((24, 36), 12), random((36, 40), 13)
    c, choice = r.matmul(a, b, return_choice=True)
    assert_close(c, a @ b)
    assert choice.kind == "exact" and choice.schedule == result.best_schedule
    assert choice.entry == atvoss.Workload(TUNED) and choice.table_time_us > 0
    near = r.choose({"op": "matmul", "dtype": "float32", "dims": {"M": 20, "N": 40, "K": 36}})
    assert near.kind == "nearest" and near.distance > 0 and near.entry == atvoss.Workload(TUNED)
    a2 = random((20, 36), 14)
    assert_close(r.matmul(a2, b), a2 @ b)
    other = r.choose({"op": "matmul", "dtype": "float32", "dims": {"M": 8, "N": 8, "K": 8}, "epilogue": ["gelu"]})
    assert other.kind == "default" and "no matmul entry" in other.reason


def test_another_cpus_table_is_refused_or_ignored(tuned_table, tmp_path):
    table, _ = tuned_table
    doc = json.load(open(table))
    doc["header"]["target"]["name"] = "host-000000000000"
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="host-000000000000"):
        rt.Runtime(foreign)
    r = rt.Runtime(foreign, foreign_table="defaults")
    assert "host-000000000000" in r.no_table_reason
    assert r.choose(TUNED).kind == "default"
    with pytest.raises(ValueError, match="foreign_table"):
        rt.Runtime(foreign, foreign_table="maybe")


def test_bad_tables_and_arrays_name_what_is_wrong(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(ValueError, match="bad.json"):
        rt.Runtime(bad)
    with pytest.raises(RuntimeError, match="absent.json"):
        rt.Runtime(tmp_path / "absent.json")
    r = rt.Runtime()
    a, b = random((4, 6), 1), random((6, 5), 2)
    with pytest.raises(TypeError, match="'a'.*float32"):
        r.matmul(a.astype(np.float64), b)
    with pytest.raises(TypeError, match="'b'"):
        r.matmul(a, [[1.0]])
    with pytest.raises(ValueError, match="do not multiply"):
        r.matmul(a, random((5, 6), 3))
    with pytest.raises(ValueError, match="'bias' must have shape \\(5,\\)"):
        r.matmul(a, b, ["bias"], bias=random((4,), 4))
    with pytest.raises(ValueError, match="'bias' is null"):
        r.matmul(a, b, ["bias"])
    with pytest.raises(ValueError, match="'residual' given"):
        r.matmul(a, b, residual=random((4, 5), 5))
    with pytest.raises(ValueError, match="'residual' must have the output's shape"):
        r.matmul(a, b, ["add"], residual=random((5, 4), 5))
    with pytest.raises(TypeError, match="sequence"):
        r.matmul(a, b, "bias")


def test_conv2d_runs_where_the_code_generator_serves_it():
    # NHWC input, HWIO filter, as the host generates them (docs/host-backend.md).
    x, f = random((1, 6, 6, 3), 1), random((3, 3, 3, 4), 2)
    out = rt.conv2d(x, f, 1, 1)
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros((1, 6, 6, 4), np.float32)
    for y in range(6):
        for xx in range(6):
            want[0, y, xx, :] = np.tensordot(padded[0, y:y + 3, xx:xx + 3, :], f, axes=3)
    assert_close(out, want)
    slope = random((4,), 3)
    assert_close(rt.conv2d(x, f, 1, 1, ["leaky_relu"], slope=slope), np.where(want < 0, want * slope, want))


def test_the_gil_is_released_while_kernels_run():
    """A ticker thread counts the ticks that land inside each call. A held GIL lets it in only
    between calls (the interpreter cannot switch inside C++), so at most about one tick per
    call; released, it ticks every ~0.5 ms through a kernel of 10 ms or more."""
    r = rt.Runtime()
    a, b = random((768, 768), 1), random((768, 768), 2)
    r.matmul(a, b)  # compiled outside the measured calls
    ticks, windows = [], []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)

    t = threading.Thread(target=ticker)
    t.start()
    for _ in range(8):
        start = time.perf_counter()
        r.matmul(a, b)
        windows.append((start, time.perf_counter()))
    done.set()
    t.join()
    inside = sum(1 for x in ticks for lo, hi in windows if lo < x < hi)
    assert inside >= 3 * len(windows), (inside, [hi - lo for lo, hi in windows])


def test_every_public_name_of_the_module_is_documented():
    import inspect

    names = [n for n in ("Choice", "Runtime", "runtime", "matmul", "conv2d")]
    assert all((getattr(rt, n).__doc__ or "").strip() for n in names)
    methods = [m for n, m in inspect.getmembers(rt.Runtime) if not n.startswith("_")]
    assert methods and all((m.__doc__ or "").strip() for m in methods)


def test_importing_atvoss_makes_openmp_wait_passively_unless_told_otherwise():
    # Spinning OpenMP threads stalled the runtime next to numpy;
    # libgomp reads the policy once, at load.
    import subprocess
    import sys

    # The same for numpy's OpenBLAS threads, which poll 0.1 s after each call unless told.
    probe = "import os, atvoss; print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('OPENBLAS_THREAD_TIMEOUT'))"
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT")}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["PASSIVE", "4"]
    env.update(OMP_WAIT_POLICY="ACTIVE", OPENBLAS_THREAD_TIMEOUT="28")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["ACTIVE", "28"]


# The time the tuner reports is the time the runtime delivers (docs/runtime.md, "Next to numpy"). The runtime
# once delivered 23x the tuned time: the kernel's OpenMP threads waited by spinning next to
# numpy's OpenBLAS threads, and calls stalled for whole 4 ms scheduler slices. That takes a
# kernel of 2+ threads, numpy calls between the kernel's, and more runnable threads than
# cores, so each round's child runs on 2 CPUs beside a spinning process (a fresh pair per
# round), calls numpy between the kernel's calls, and has the environment a user has (no
# OMP_WAIT_POLICY: atvoss's import chooses). A run stalls or not depending on where the
# scheduler first puts the threads, and a stalling run has some calls at the tuned time, so
# the figure is the mean call over all rounds, not a median or min. On the 2-core machine,
# 128^3, threads 2: with the fix reverted (atvoss/__init__.py's setdefault removed) the mean
# was 50-440x the tuned time in each of 13 runs; fixed, 1.2-2.8x, and 5-12x with two more
# spinning processes on the machine; hence <= 20x. The tuner's time (host/kernel_timing.cpp)
# is the median of repeats that each average >= 1 ms of back-to-back calls, pinned, waiting
# passively; a runtime call adds the binding's checks and a fresh output array, and waits
# beside the spinner, hence a min within 3x (1.0-1.6x seen; room for a CI machine running
# other suites beside it) rather than 1x.
_TIMING_CHILD = r"""
import json, sys, time
import numpy as np
import atvoss.runtime as rt
table, n, calls, budget_s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
rng = np.random.default_rng(0)
a, b = (rng.uniform(-1, 1, (n, n)).astype(np.float32) for _ in range(2))
r = rt.Runtime(table)
c, choice = r.matmul(a, b, return_choice=True)
want = a @ b
for _ in range(20):
    r.matmul(a, b), np.matmul(a, b)
times, end = [], time.perf_counter() + budget_s
while len(times) < calls and time.perf_counter() < end:
    t0 = time.perf_counter_ns()
    r.matmul(a, b)
    times.append((time.perf_counter_ns() - t0) / 1e3)
    np.matmul(a, b)  # between the kernel's calls, as in a model that mixes the two
mean = sum(times) / len(times)
times.sort()
print(json.dumps({"kind": choice.kind, "threads": choice.schedule["threads"], "table_us": choice.table_time_us,
                  "error": float(np.max(np.abs(c - want) / np.maximum(np.abs(want), 1))), "calls": len(times),
                  "min_us": times[0], "median_us": times[len(times) // 2], "mean_us": mean,
                  "p90_us": times[len(times) * 9 // 10]}))
"""

_SPIN = "import time\nend = time.time() + 60\nwhile time.time() < end:\n    pass\n"


class _TwoThreads(atvoss.SearchStrategy):
    """The default schedule with threads 2, for each tile_m: multi-threaded kernels to tune."""

    def __init__(self, *args):
        super().__init__(*args)
        self.seen = []

    def propose(self, n):
        out = []
        for tile_m in self.space.knobs["tile_m"]:
            s = {**dict(self.space.default()), "threads": 2, "tile_m": tile_m}
            if len(out) < n and s not in self.seen and self.space.check(s)[0]:
                self.seen.append(s)
                out.append(s)
        return out


def _two_thread_table(w, d):
    """A table whose entry is the best threads-2 schedule with the time the tuner measured
    for it: tune threads-2 variants, then keep their records only (the one-thread default is
    always measured first, and it may win on a busy machine)."""
    atvoss.register_strategy(name="py-two-threads")(_TwoThreads)
    try:
        atvoss.tune(w, "host", trials=4, strategy="py-two-threads", seed=1, db=str(d / "all.db"))
    finally:
        atvoss.unregister_strategy("py-two-threads")
    atvoss.Database(str(d / "all.db")).export(str(d / "all.jsonl"))
    with open(d / "all.jsonl") as f:
        (d / "two.jsonl").write_text("".join(x for x in f if json.loads(x)["schedule"]["threads"] == 2))
    db = atvoss.Database(str(d / "two.db"))
    db.import_(str(d / "two.jsonl"))
    db.export_table("host", str(d / "table.json"))
    return str(d / "table.json")


def _time_the_runtime(table, cpus, rounds):
    """The child's figures, once per round: each round a fresh child and spinner, because
    where the scheduler first puts their threads decides whether a run stalls."""
    import subprocess
    import sys

    unset = ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    env = {k: v for k, v in os.environ.items() if k not in unset}

    def pin():
        os.sched_setaffinity(0, cpus)

    figures = []
    for _ in range(rounds):
        spin = subprocess.Popen([sys.executable, "-c", _SPIN], preexec_fn=pin)
        try:
            out = subprocess.run([sys.executable, "-c", _TIMING_CHILD, table, "128", "300", "1.5"], env=env,
                                 preexec_fn=pin, capture_output=True, text=True, timeout=120)
        finally:
            spin.kill()
            spin.wait()
        assert out.returncode == 0, out.stderr
        figures.append(json.loads(out.stdout))
    return figures


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # "not faster than the default": not the point here
@pytest.mark.parametrize("case", ["tuned", "two-threads"])
def test_the_runtime_delivers_the_time_the_tuner_reported(case, tmp_path):
    cpus = sorted(os.sched_getaffinity(0))[-2:]
    w = {"op": "matmul", "dtype": "float32", "dims": {"M": 128, "N": 128, "K": 128}}
    if case == "tuned":
        table = str(tmp_path / "table.json")
        tuned_us = atvoss.tune(w, "host", trials=8, strategy="model-guided", seed=1, db=str(tmp_path / "t.db"),
                               export=table).best_us
    else:
        if len(cpus) < 2 or 2 not in atvoss.ScheduleSpace.of(w, "host").knobs["threads"]:
            pytest.skip("needs 2 CPUs and threads 2 in the host space (ATVOSS_HOST_MAX_THREADS unset)")
        table, tuned_us = _two_thread_table(w, tmp_path), None
    rounds = _time_the_runtime(table, cpus, 5)
    for got in rounds:
        print(case, got)  # pytest -s shows the figures
    t = rounds[0]["table_us"]
    assert all(g["kind"] == "exact" and g["error"] <= 1e-4 for g in rounds) and t == pytest.approx(tuned_us or t)
    assert case == "tuned" or rounds[0]["threads"] == 2
    mean = sum(g["mean_us"] * g["calls"] for g in rounds) / sum(g["calls"] for g in rounds)
    fastest = min(g["min_us"] for g in rounds)
    print(case, f"tuned {t:.1f} us, runtime: mean {mean:.1f} us ({mean / t:.2f}x), min {fastest:.1f} us")
    assert mean <= 20 * t, f"calls stall: mean {mean:.0f} us, the tuner's {t:.1f} us: {rounds}"
    assert fastest <= 3 * t, f"never as fast as tuned ({t:.1f} us): {rounds}"
    assert all(g["median_us"] >= 0.2 * t for g in rounds), f"faster than the tuner said ({t:.1f} us): {rounds}"


def test_a_prepared_conv2d_filter_gives_the_per_call_output():
    """Prepared once (packed by the kernel the runtime runs), the filter gives the per-call
    output bit for bit and is not read again; another conv, or another dtype, refuses it
    naming 'filter'."""
    r = rt.Runtime()
    x, f, b = random((1, 9, 8, 19), 11), random((3, 3, 19, 24), 12), random((24,), 13)
    want = r.conv2d(x, f, 1, 1, ["bias"], bias=b)
    prepared = r.prepare_conv2d(f, x.shape, 1, 1, ["bias"])
    assert prepared.filter_shape == (3, 3, 19, 24) and prepared.dtype == "float32" and prepared.nbytes > 0
    f[...] = 0.5
    np.testing.assert_array_equal(r.conv2d(x, prepared, 1, 1, ["bias"], bias=b), want)
    with pytest.raises(ValueError, match="'filter'"):
        r.conv2d(x, prepared, 2, 1, ["bias"], bias=b)
    with pytest.raises(ValueError, match="'filter'"):
        r.conv2d_bf16(x.view(np.uint16)[..., :19], prepared, 1, 1)
