"""The value -> cost mapping of atvoss.Optimizer (docs/decisions/objective-values.md): one
landscape searched as a positive time (minimize t), as a throughput (maximize 1/t), as a
shifted loss of any sign (minimize t - shift) and as a negated time (maximize -t), by the
model-guided default, over seeds. The mapping should leave the search where the plain time
puts it: each variant's mean best time at the budget is printed, with how often it found the
optimum.

    PYTHONPATH=build/python /usr/bin/python3 bench/objective_values.py [--trials 40] [--seeds 10]
"""
import argparse
import math
import statistics

import atvoss

SPACE = {"a": list(range(1, 17)), "b": list(range(1, 17)), "c": [1, 2, 4, 8]}


def time_of(a: int, b: int, c: int) -> float:
    """A needle-ish landscape: one best point (a 12, b 5, c 4) and a narrow valley around it."""
    return 50.0 + 3.0 * abs(a - 12) + 2.0 * (b - 5) ** 2 + 40.0 * abs(math.log2(c) - 2) + 7.0 * ((a * b) % 3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args()
    best_time = min(time_of(a, b, c) for a in SPACE["a"] for b in SPACE["b"] for c in SPACE["c"])
    shift = 80.0  # the optimum and some of its neighbours become negative
    variants = {
        "minimize t": ("minimize", lambda a, b, c: time_of(a, b, c), lambda v: v),
        "maximize 1/t": ("maximize", lambda a, b, c: 1.0 / time_of(a, b, c), lambda v: 1.0 / v),
        f"minimize t-{shift:g}": ("minimize", lambda a, b, c: time_of(a, b, c) - shift, lambda v: v + shift),
        "maximize -t": ("maximize", lambda a, b, c: -time_of(a, b, c), lambda v: -v),
    }
    print(f"{args.trials} trials, seeds 0..{args.seeds - 1}, optimum {best_time:g}")
    print(f"{'objective':>16} {'mean best t':>11} {'found':>6}")
    for name, (direction, f, back) in variants.items():
        bests = [back(atvoss.optimize(f, SPACE, args.trials, direction=direction, seed=s).best.value)
                 for s in range(args.seeds)]
        found = sum(b == best_time for b in bests)
        print(f"{name:>16} {statistics.fmean(bests):>11.2f} {found:>3}/{args.seeds}")


if __name__ == "__main__":
    main()
