"""Parallel workers on one database (docs/python-objective.md, "Parallel workers"): the
trials per second of 1 worker against 4 processes (and 4 threads) sharing one SQLite file,
and whether any point was measured twice. The objective sleeps --objective-ms, standing for a
measurement that waits on something else (a GPU, a board, a remote runner), which is what
parallel workers are for; a CPU-bound objective on this 2-core machine tops out at 2x.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_parallel_workers.py [--trials 96] [--objective-ms 20] [--batch 1]
        [--strategy-config '{"retrain_fraction": 1000}']

"vs 1" is against one worker over the whole run (start-up and exit included), then over the
span from the first objective call to the last.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

WORKER = r"""
import json, os, sys, time
import atvoss
db, log, trials, ms, seed, n_jobs = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
open(f"{log}.ready{seed}", "w").close()
while not os.path.exists(f"{log}.go"):
    time.sleep(0.001)
def objective(a, b):
    start = time.time()
    time.sleep(ms / 1000)
    with open(log, "a") as f:
        f.write(json.dumps([a, b, start, time.time()]) + "\n")
    return 1.0 + (a - 11) ** 2 + (b - 5) ** 2
atvoss.minimize(objective, {"a": list(range(16)), "b": list(range(16))}, trials=trials, db=db, name="bench",
                seed=seed, batch=int(sys.argv[7]), n_jobs=n_jobs, strategy_config=json.loads(sys.argv[8]))
"""


BATCH = 1
STRATEGY_CONFIG = "{}"  # every worker's model-guided strategy_config


def run(workers: int, n_jobs: int, trials: int, ms: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        db, log = os.path.join(tmp, "w.db"), os.path.join(tmp, "calls.jsonl")
        env = dict(os.environ, OMP_NUM_THREADS="1")
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, db, log, str(trials), str(ms), str(i), str(n_jobs),
                                   str(BATCH), STRATEGY_CONFIG],
                                  env=env) for i in range(workers)]
        while sum(os.path.exists(f"{log}.ready{i}") for i in range(workers)) < workers:
            time.sleep(0.01)
        start = time.perf_counter()
        open(f"{log}.go", "w").close()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        codes = [p.wait() for p in procs]
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        calls = [json.loads(line) for line in open(log)]
    points = [(a, b) for a, b, _, _ in calls]
    # From the first objective call's start to the last one's end: the run without its
    # start-up (importing, opening the database) and without the processes' exits.
    span = max(c[3] for c in calls) - min(c[2] for c in calls)
    return {"workers": workers, "threads": n_jobs, "exit": codes, "trials": len(points),
            "twice": len(points) - len(set(points)), "wall_s": wall, "per_s": len(points) / wall,
            "span_s": span, "span_per_s": len(points) / span,
            # CPU of the worker processes over their whole life (imports included)
            "cpu_s": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=96)
    ap.add_argument("--objective-ms", type=float, default=20.0)
    ap.add_argument("--batch", type=int, default=1, help="configurations per ask (minimize's batch)")
    ap.add_argument("--strategy-config", default="{}",
                    help="JSON strategy_config of every worker (e.g. a retrain_fraction that stops refits)")
    args = ap.parse_args()
    global BATCH, STRATEGY_CONFIG
    BATCH = args.batch
    STRATEGY_CONFIG = args.strategy_config
    rows = [run(1, 1, args.trials, args.objective_ms), run(4, 1, args.trials, args.objective_ms),
            run(1, 4, args.trials, args.objective_ms)]
    base, span_base = rows[0]["per_s"], rows[0]["span_per_s"]
    print(f"{args.trials} trials, objective {args.objective_ms:g} ms, batch {BATCH}, one SQLite database, "
          f"strategy_config {STRATEGY_CONFIG}")
    print(f"{'processes':>9} {'threads':>7} {'trials':>6} {'twice':>5} {'wall s':>7} {'trials/s':>8} {'vs 1':>5}"
          f" {'span s':>7} {'vs 1':>5} {'cpu s':>6}")
    for r in rows:
        print(f"{r['workers']:>9} {r['threads']:>7} {r['trials']:>6} {r['twice']:>5} {r['wall_s']:>7.2f} "
              f"{r['per_s']:>8.1f} {r['per_s'] / base:>4.2f}x {r['span_s']:>7.2f} "
              f"{r['span_per_s'] / span_base:>4.2f}x {r['cpu_s']:>6.2f}")
    # A worker checks the budget before it asks, so each may run one batch past it.
    bad = [r for r in rows
           if r["twice"] or not args.trials <= r["trials"] < args.trials + r["workers"] * BATCH or any(r["exit"])]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
