"""The tuned host kernels through atvoss.runtime against numpy.matmul (OpenBLAS), in one
process, and against the time the tuner reported (the two must agree: docs/runtime.md, "Next to numpy").

What it measures: for each square float32 matmul size (default 128, 256, 512, 1024) it gets a
table tuned for this CPU (tunes each size with atvoss.tune(..., "host", trials=--trials,
strategy="model-guided") into one database and exports its table, or reads --table), then,
after a warm-up, alternates ``atvoss.runtime.Runtime(table).matmul(a, b)`` and
``numpy.matmul(a, b)`` on the same arrays many times (which of the two goes first alternates
too), timing every call with time.perf_counter_ns. Per size it prints each side's median and
min, numpy/atvoss (> 1: atvoss is faster; from the medians, and from the mins), the tuner's time
for the schedule that ran (Choice.table_time_us: the median of repeats that each average
>= 1 ms of back-to-back calls in the pinned kernel runner, host/kernel_timing.cpp) and
runtime median / tuner time (~1 when the runtime delivers what was tuned; a runtime call also
pays the binding's checks and a fresh output array, as numpy's does). It checks the two
results agree (max |atvoss - numpy| / max(|numpy|, 1) <= 1e-4, the tuner's own criterion).
The last lines, one per size, start with "RESULT" and hold the same figures as key=value
pairs, for quoting.

Threads: atvoss runs each kernel with the threads its tuned schedule chose (the `threads`
knob, 1 up to the physical cores; ATVOSS_HOST_MAX_THREADS=1 while tuning caps it); numpy's
OpenBLAS uses its own thread count, by default every CPU. Both counts are printed.
--numpy-threads N sets OpenBLAS's: with threadpoolctl if installed, else OPENBLAS_NUM_THREADS
set before numpy is imported, and the count is read back from OpenBLAS itself
(openblas_get_num_threads). --numpy-threads 1 gives the one-core comparison when the tuned
schedules ran one thread. Idle OpenBLAS threads keep polling for work for a while after each
call (OPENBLAS_THREAD_TIMEOUT: 2^n cycles, n from 4 to 30; OpenBLAS's default is long, n 28,
about 0.1 s), so on a two-core machine they can take a core from a two-thread atvoss kernel
that follows; the value is printed, and OPENBLAS_THREAD_TIMEOUT=4 (threads sleep at once) shows
how much of a gap that is. atvoss's own OpenMP threads wait passively (OMP_WAIT_POLICY,
set by importing atvoss unless set before).

    PYTHONPATH=build/python /usr/bin/python3 bench/runtime_vs_numpy.py   # tunes 4 x 24 trials, then times
    PYTHONPATH=build/python /usr/bin/python3 bench/runtime_vs_numpy.py --table out/host-table.json
    ... --sizes 256,512 --trials 48 --seconds 5 --numpy-threads 1 --out /tmp/rvn

The figures are wall-clock times: take them on a quiet machine (the load average is printed
before and after; a compile or test run beside it moves medians by tens of percent and makes
two-thread kernels stall). Interleaving puts both sides under the same conditions, and the
min is the figure least moved by load. The compile cache ($XDG_CACHE_HOME/atvoss) is shared
with the tuner, so the runtime's first call of a tuned shape compiles nothing.
"""
import argparse
import ctypes
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="128,256,512,1024", help="square matmul sizes, comma-separated")
    p.add_argument("--table", help="an exported host table to use instead of tuning")
    p.add_argument("--trials", type=int, default=24, help="tuning trials per size (default 24)")
    p.add_argument("--strategy", default="model-guided", help="tuning strategy (default model-guided)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", help="folder for the tuning database and table (default: a new temporary folder)")
    p.add_argument("--seconds", type=float, default=4.0, help="timed seconds per size (default 4)")
    p.add_argument("--min-pairs", type=int, default=30, help="at least this many timed pairs per size (default 30)")
    p.add_argument("--max-pairs", type=int, default=3000, help="at most this many timed pairs per size (default 3000)")
    p.add_argument("--warmup", type=int, default=10, help="untimed pairs first (default 10)")
    p.add_argument("--numpy-threads", type=int, help="OpenBLAS threads for numpy (default: OpenBLAS's own)")
    a = p.parse_args(argv)
    try:
        a.sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    except ValueError:
        p.error("--sizes: comma-separated integers, e.g. 128,256")
    if not a.sizes or min(a.sizes) < 1:
        p.error("--sizes: at least one size, each >= 1")
    if a.trials < 1 or a.seconds <= 0 or a.min_pairs < 1 or a.max_pairs < a.min_pairs or a.warmup < 0:
        p.error("--trials, --seconds, --min-pairs >= 1; --max-pairs >= --min-pairs; --warmup >= 0")
    if a.numpy_threads is not None and a.numpy_threads < 1:
        p.error("--numpy-threads: >= 1")
    if a.table and not os.path.isfile(a.table):
        p.error(f"--table: no file {a.table}")
    return a


def openblas():
    """OpenBLAS as loaded by numpy (ctypes handle), or None: found in /proc/self/maps."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and ".so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_num_threads  # noqa: B018 (raises AttributeError if absent)
            return lib
        except (OSError, AttributeError):
            continue
    return None


def numpy_blas(numpy_threads):
    """(description, threads) of numpy's BLAS, setting its threads where asked; the limiter
    (threadpoolctl's) is returned too and must stay alive."""
    limiter, how = None, "OpenBLAS's default"
    try:
        import threadpoolctl
    except ImportError:
        threadpoolctl = None
    if numpy_threads is not None:
        if threadpoolctl is not None:
            limiter = threadpoolctl.threadpool_limits(numpy_threads, user_api="blas")
            how = "threadpoolctl"
        else:
            how = "OPENBLAS_NUM_THREADS before numpy's import (threadpoolctl is not installed)"
    lib = openblas()
    if lib is not None:
        lib.openblas_get_config.restype = ctypes.c_char_p
        config = lib.openblas_get_config().decode(errors="replace")
        return f"{config}; threads set by {how}", int(lib.openblas_get_num_threads()), limiter
    if threadpoolctl is not None:
        info = [i for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
        if info:
            name = f"{info[0].get('internal_api')} {info[0].get('version')}"
            return f"{name}; {how}", int(info[0]["num_threads"]), limiter
    return f"unknown BLAS (not OpenBLAS); {how}", -1, limiter


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_average():
    try:
        return "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "unknown"


def tune_table(atvoss, sizes, a):
    """Tunes each size into one database and exports its host table; {size: best_us}."""
    out = a.out or tempfile.mkdtemp(prefix="runtime_vs_numpy-")
    os.makedirs(out, exist_ok=True)
    db, table = os.path.join(out, "runtime_vs_numpy.db"), os.path.join(out, "runtime_vs_numpy-table.json")
    tuned = {}
    for n in sizes:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "not faster than the default": printed below
            r = atvoss.tune(workload(n), "host", trials=a.trials, strategy=a.strategy, db=db, seed=a.seed)
        tuned[n] = r.best_us
        print(f"tuned {n}^3: {r.trials} trials ({r.measured} measured now) in {time.perf_counter() - start:.1f} s: "
              f"best {r.best_us:.1f} us, default {r.default_us:.1f} us (speedup {r.speedup:.2f}), "
              f"threads {r.best_schedule['threads']}", flush=True)
    atvoss.Database(db).export_table("host", table)
    print(f"database {db}\ntable {table} (rerun with --table {table})", flush=True)
    return table, tuned


def workload(n):
    return {"op": "matmul", "dtype": "float32", "dims": {"M": n, "N": n, "K": n}}


def time_pairs(np, run_atvoss, a_arr, b_arr, args):
    """Alternates the two calls: (atvoss times, numpy times) in microseconds."""
    ns = time.perf_counter_ns
    for _ in range(args.warmup):
        run_atvoss(a_arr, b_arr)
        np.matmul(a_arr, b_arr)
    ta, tn = [], []
    end = time.perf_counter() + args.seconds
    i = 0
    while i < args.max_pairs and (i < args.min_pairs or time.perf_counter() < end):
        if i % 2 == 0:
            t0 = ns(); run_atvoss(a_arr, b_arr); t1 = ns(); np.matmul(a_arr, b_arr); t2 = ns()  # noqa: E702
            ta.append((t1 - t0) / 1e3)
            tn.append((t2 - t1) / 1e3)
        else:
            t0 = ns(); np.matmul(a_arr, b_arr); t1 = ns(); run_atvoss(a_arr, b_arr); t2 = ns()  # noqa: E702
            tn.append((t1 - t0) / 1e3)
            ta.append((t2 - t1) / 1e3)
        i += 1
    return ta, tn


def fmt(key, value):
    if not isinstance(value, float):
        return str(value)
    return f"{value:.1f}" if key.endswith("_us") else f"{value:.3f}"


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.numpy_threads is not None:
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.numpy_threads)  # read once, when numpy loads OpenBLAS
    import numpy as np

    import atvoss
    import atvoss.runtime as rt

    blas, numpy_threads, limiter = numpy_blas(args.numpy_threads)  # noqa: F841 (limiter: kept alive)
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} allowed), "
          f"load average {load_average()} (take figures on a quiet machine)")
    print(f"numpy {np.__version__}: {blas}; numpy threads {numpy_threads}, "
          f"OPENBLAS_THREAD_TIMEOUT={os.environ.get('OPENBLAS_THREAD_TIMEOUT', '(unset)')}")
    print(f"atvoss {atvoss.__version__}: OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, "
          f"ATVOSS_HOST_MAX_THREADS={os.environ.get('ATVOSS_HOST_MAX_THREADS', '(unset)')}", flush=True)

    tuned = {}
    if args.table:
        table = args.table
    else:
        table, tuned = tune_table(atvoss, args.sizes, args)
    runtime = rt.Runtime(table)

    rows = []
    rng = np.random.default_rng(args.seed)
    for n in args.sizes:
        a_arr = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        b_arr = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        c, choice = runtime.matmul(a_arr, b_arr, return_choice=True)  # compiles here if the cache lacks it
        want = np.matmul(a_arr, b_arr)
        err = float(np.max(np.abs(c - want) / np.maximum(np.abs(want), 1)))
        ta, tn = time_pairs(np, runtime.matmul, a_arr, b_arr, args)
        tuner_us = choice.table_time_us if choice.kind == "exact" else float("nan")
        row = {
            "size": n, "pairs": len(ta), "kind": choice.kind, "atvoss_threads": int(choice.schedule["threads"]),
            "numpy_threads": numpy_threads,
            "atvoss_median_us": statistics.median(ta), "atvoss_min_us": min(ta),
            "numpy_median_us": statistics.median(tn), "numpy_min_us": min(tn),
            "tuned_us": tuner_us, "max_rel_err": err, "allclose": err <= 1e-4,
        }
        row["numpy_over_atvoss"] = row["numpy_median_us"] / row["atvoss_median_us"]
        row["numpy_over_atvoss_min"] = row["numpy_min_us"] / row["atvoss_min_us"]
        row["runtime_over_tuned"] = row["atvoss_median_us"] / tuner_us
        row["runtime_min_over_tuned"] = row["atvoss_min_us"] / tuner_us
        if n in tuned and choice.kind == "exact" and abs(tuned[n] - tuner_us) > 1e-6 * tuner_us:
            print(f"  note: the tune result said {tuned[n]:.1f} us, the table {tuner_us:.1f} us")
        rows.append(row)
        gflop = 2.0 * n ** 3 / 1e3  # per microsecond -> GFLOP/s
        print(f"\n{n}x{n}x{n} ({choice.kind}: {choice.reason}; schedule {dict(choice.schedule)})")
        print(f"  {'':8} {'median us':>11} {'min us':>11} {'GFLOP/s':>8} {'threads':>7}")
        print(f"  {'atvoss':8} {row['atvoss_median_us']:11.1f} {row['atvoss_min_us']:11.1f} "
              f"{gflop / row['atvoss_median_us']:8.1f} {row['atvoss_threads']:7d}")
        print(f"  {'numpy':8} {row['numpy_median_us']:11.1f} {row['numpy_min_us']:11.1f} "
              f"{gflop / row['numpy_median_us']:8.1f} {numpy_threads:7d}")
        print(f"  numpy/atvoss {row['numpy_over_atvoss']:.2f} (medians), {row['numpy_over_atvoss_min']:.2f} (mins); "
              f"tuner {tuner_us:.1f} us, runtime median/tuner {row['runtime_over_tuned']:.2f}, "
              f"min/tuner {row['runtime_min_over_tuned']:.2f}; {len(ta)} pairs; "
              f"results agree: {row['allclose']} (max rel err {err:.1e})", flush=True)

    print(f"\nload average after: {load_average()}")
    keys = ["size", "kind", "atvoss_threads", "numpy_threads", "pairs", "atvoss_median_us", "atvoss_min_us",
            "numpy_median_us", "numpy_min_us", "numpy_over_atvoss", "numpy_over_atvoss_min", "tuned_us",
            "runtime_over_tuned", "runtime_min_over_tuned", "allclose"]
    for row in rows:
        print("RESULT " + " ".join(f"{k}={fmt(k, row[k])}" for k in keys))
    return 0 if all(r["allclose"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
