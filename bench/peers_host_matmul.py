"""Search against Kernel Tuner on a kernel measured for real on this CPU: the blocked fp32
matmul of bench/peers_blocked_matmul.cc, compiled (g++ -O3 -march=native) and timed by
Kernel Tuner's C backend, its result checked against numpy.

1. Kernel Tuner measures the whole space once (its brute_force strategy, live) into a cache
   file; every strategy then searches the same measurements.
2. Kernel Tuner's strategies, atvoss's default strategy through its Kernel Tuner adapter
   (atvoss.kernel_tuner) and Optuna's TPE and CMA-ES search that cache in Kernel Tuner's
   simulation mode, with the real restrictions and Kernel Tuner's accounting
   (bench/peers_common.py), 5 seeds, 25/50/100 unique evaluations.

    PYTHONPATH=build/python build/peers/bin/python bench/peers_host_matmul.py --cache build/peers-host-matmul.json

Step 1 takes a few minutes on 2 cores and is skipped when the cache file exists (delete it
to measure again). The figures of docs/decisions/peers-kernel-tuner-optuna.md come from it.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers_common as pc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "peers_blocked_matmul.cc")
KERNEL = "blocked_matmul"


def space(n):
    """The knobs and Kernel Tuner restrictions of the matmul (N is a one-value knob, so the
    cache names the size)."""
    tune_params = {
        "N": [n],
        "BLOCK_I": [2, 4, 8, 16, 32, 64],
        "BLOCK_J": [16, 32, 64, 128, 384],
        "BLOCK_K": [8, 16, 32, 64, 128, 384],
        "UNROLL_K": [1, 2, 4, 8],
    }
    restrictions = [
        "N % BLOCK_I == 0 and N % BLOCK_J == 0 and N % BLOCK_K == 0",
        "BLOCK_K % UNROLL_K == 0",
        "BLOCK_K * BLOCK_J <= 32768",  # B's tile within 128 KiB
    ]
    return tune_params, restrictions


def measure(cache, n, iterations):
    """Kernel Tuner compiles and times every valid configuration (brute force) into cache."""
    import kernel_tuner
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    c = np.zeros((n, n), np.float32)
    answer = [(a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32), None, None]
    tune_params, restrictions = space(n)
    t0 = time.perf_counter()
    results, _ = kernel_tuner.tune_kernel(
        KERNEL, SOURCE, (n, n), [c, a, b], tune_params, restrictions=restrictions, lang="C",
        compiler_options=["-O3", "-march=native"], answer=answer, atol=1e-3, iterations=iterations,
        cache=cache, strategy="brute_force", quiet=True, verbose=False)
    print(f"measured {len(results)} configurations in {time.perf_counter() - t0:.0f} s", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", required=True, help="Kernel Tuner cache file (.json): measured once, then reused")
    ap.add_argument("--n", type=int, default=384)
    ap.add_argument("--iterations", type=int, default=5, help="Kernel Tuner's timed runs per configuration")
    ap.add_argument("--strategies", default=",".join(pc.ALL_STRATEGIES))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--seed-base", type=int, default=1)
    args = ap.parse_args()
    if not args.cache.endswith(".json"):
        sys.exit("--cache: give a path ending in .json (Kernel Tuner appends it otherwise)")
    strategies = args.strategies.split(",")
    unknown = [s for s in strategies if s not in pc.ALL_STRATEGIES]
    if unknown:
        sys.exit(f"--strategies: unknown {unknown} (known: {', '.join(pc.ALL_STRATEGIES)})")
    print("peers:", ", ".join(f"{k} {v}" for k, v in pc.peer_versions().items()))
    if not os.path.exists(args.cache):
        measure(args.cache, args.n, args.iterations)
    doc = pc.load_cache(args.cache)
    n = doc["tune_params"]["N"][0]
    tune_params, restrictions = space(n)
    if doc["tune_params"] != tune_params:
        sys.exit(f"{args.cache}: measured for other knobs than this script's; delete it to measure again")
    valid = [e for e in doc["cache"].values() if isinstance(e.get("time"), (int, float))]
    optimum = pc.optimum_of(doc)
    print(f"space: {len(doc['cache'])} configurations, {len(doc['cache']) - len(valid)} failed; "
          f"best {optimum:.3f} ms ({2 * n ** 3 / optimum / 1e6:.1f} GFLOP/s), median "
          f"{float(np.median([e['time'] for e in valid])):.3f} ms")
    rows = []
    for strategy in strategies:
        for seed in range(args.seed_base, args.seed_base + args.seeds):
            try:
                results, _ = pc.run_strategy(strategy, seed, args.cache, doc, restrictions, max(pc.BUDGETS))
            except Exception as e:  # reported, never hidden
                print(f"{strategy} seed {seed}: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
                continue
            fractions, evals = pc.curve(results, doc["tune_params_keys"], optimum)
            rows.append(("matmul", strategy, seed, fractions, evals))
    pc.print_table(rows, strategies, title=f"\nFraction of optimum, blocked matmul N={n} on this CPU, "
                                           f"{args.seeds} seeds (median, then mean)")


if __name__ == "__main__":
    main()
