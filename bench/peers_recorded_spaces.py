"""Search quality against Kernel Tuner and Optuna on the recorded GPU spaces
(data/recorded-spaces): Kernel Tuner's strategies in its simulation mode, atvoss's default
strategy through its Kernel Tuner adapter, Optuna's TPE and CMA-ES live, all through
``kernel_tuner.tune_kernel`` on the same cache files with the same accounting
(bench/peers_common.py). Prints, per strategy and budget (25/50/100 unique evaluations), the
median and mean fraction of the optimum over spaces and seeds; --csv keeps every run.

    PYTHONPATH=build/python build/peers/bin/python bench/peers_recorded_spaces.py --seeds 5 --jobs 2

The figures of docs/decisions/peers-kernel-tuner-optuna.md come from that command.
"""
import argparse
import csv
import glob
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers_common as pc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_space(args):
    """Every strategy and seed on one space: [(space, strategy, seed, fractions, evals, escapes, s)]."""
    path, strategies, seeds = args
    space = os.path.basename(path)[:-len(".json.gz")]
    doc = pc.load_cache(path)
    optimum = pc.optimum_of(doc)
    restrictions = pc.in_cache_restriction(doc)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = pc.write_plain_cache(doc, tmp)
        for strategy in strategies:
            for seed in seeds:
                t0 = time.perf_counter()
                try:
                    results, escapes = pc.run_strategy(strategy, seed, cache, doc, restrictions, max(pc.BUDGETS))
                except Exception as e:  # reported, never hidden: the row says the run failed
                    print(f"{space} {strategy} seed {seed}: FAILED: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                    continue
                fractions, evals = pc.curve(results, doc["tune_params_keys"], optimum)
                rows.append((space, strategy, seed, fractions, evals, escapes, time.perf_counter() - t0))
                print(f"{space} {strategy} seed {seed}: {fractions[100]:.3f} at 100 ({evals} evals, "
                      f"{rows[-1][-1]:.1f} s)", file=sys.stderr, flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "recorded-spaces"))
    ap.add_argument("--spaces", default="", help="comma-separated names (default: every *.json.gz in --data)")
    ap.add_argument("--strategies", default=",".join(pc.ALL_STRATEGIES))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--seed-base", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1, help="spaces searched at once (processes)")
    ap.add_argument("--csv", default="")
    args = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(args.data, "*.json.gz")))
    if args.spaces:
        wanted = args.spaces.split(",")
        paths = [p for p in paths if os.path.basename(p)[:-len(".json.gz")] in wanted]
        if len(paths) != len(wanted):
            sys.exit(f"--spaces: some of {wanted} are not in {args.data}")
    strategies = args.strategies.split(",")
    unknown = [s for s in strategies if s not in pc.ALL_STRATEGIES]
    if unknown:
        sys.exit(f"--strategies: unknown {unknown} (known: {', '.join(pc.ALL_STRATEGIES)})")
    seeds = list(range(args.seed_base, args.seed_base + args.seeds))
    print("peers:", ", ".join(f"{k} {v}" for k, v in pc.peer_versions().items()))
    work = [(p, strategies, seeds) for p in paths]
    t0 = time.perf_counter()
    if args.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            rows = [r for rs in pool.map(one_space, work, chunksize=1) for r in rs]
    else:
        rows = [r for w in work for r in one_space(w)]
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["space", "strategy", "seed"] + [f"frac_at_{b}" for b in pc.BUDGETS] +
                         ["evaluations", "escapes", "seconds"])
            for space, s, seed, fr, evals, esc, sec in rows:
                out.writerow([space, s, seed] + [f"{fr[b]:.4f}" for b in pc.BUDGETS] +
                             [evals, "" if esc is None else esc, f"{sec:.2f}"])
    table = [(r[0], r[1], r[2], r[3], r[4]) for r in rows]
    pc.print_table(table, strategies, title=f"\nFraction of optimum over {len(paths)} recorded spaces x "
                                             f"{len(seeds)} seeds (median, then mean)")
    short = [r for r in rows if r[4] < max(pc.BUDGETS)]
    if short:
        print(f"runs that stopped before {max(pc.BUDGETS)} unique evaluations (their final best counts): "
              + ", ".join(sorted({f'{r[1]}:{r[0]}' for r in short})))
    print("\nmedian per space at 100")
    print("%-28s" % "space" + "".join("%14s" % s[:13] for s in strategies))
    for space in sorted({r[0] for r in rows}):
        line = "%-28s" % space
        for s in strategies:
            vals = [r[3][100] for r in rows if r[0] == space and r[1] == s]
            line += "%14.3f" % statistics.median(vals) if vals else "%14s" % "-"
        print(line)
    print(f"\nwall time {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
