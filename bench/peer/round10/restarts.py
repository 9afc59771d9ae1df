#!/usr/bin/env python3
"""Round 10's bound on independent restarts (search/README.md, round 10).

  restarts.py RUNS.csv [RUNS.csv ...]

The CSVs are bench_recorded_spaces runs of one strategy (one row per space and seed). Two
independent runs of 50 evaluations each spend the same 100 evaluations as one run of 100,
and find the better of their two bests. Over every ordered pair of distinct seeds of a space
this prints the mean of that better fraction (from the runs' fraction at 50), and likewise
the best of four runs of 25 (every set of four seeds), beside one run of 100. A strategy does
not know its budget and each run's fraction at 50 includes its own random start, so this is
exactly what independent restarts at 50 (25) evaluations would score.
"""
import collections, itertools, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from report import bad_input, load_numbers  # bench/peer/report.py: the peer tables' CSV reader

COLS = ("frac_at_25", "frac_at_50", "frac_at_100")


def runs_by_space(paths):
    """{space: [(frac@25, frac@50, frac@100) per seed]}, each seed once."""
    runs = collections.defaultdict(dict)
    for row, fracs in load_numbers(paths, ("space", "seed"), COLS):
        runs[row["space"]].setdefault(row["seed"], fracs)
    return {s: list(v.values()) for s, v in runs.items()}


def mean(xs):
    return sum(xs) / len(xs)


def main():
    if len(sys.argv) < 2:
        bad_input("usage: restarts.py RUNS.csv [RUNS.csv ...]")
    totals = collections.defaultdict(list)
    for space, seeds in sorted(runs_by_space(sys.argv[1:]).items()):
        if len(seeds) < 4:
            bad_input(f"{space}: {len(seeds)} seeds; the bound needs at least 4")
        one = mean([s[2] for s in seeds])
        two = mean([max(a[1], b[1]) for a, b in itertools.permutations(seeds, 2)])
        four = mean([max(q[0] for q in c) for c in itertools.combinations(seeds, 4)])
        for k, v in (("one", one), ("two", two), ("four", four)):
            totals[k].append(v)
        print(f"{space:26s} {len(seeds):3d} seeds  one run of 100: {one:.3f}  best of 2 x 50: {two:.3f}"
              f"  best of 4 x 25: {four:.3f}")
    print(f"{'mean':26s}            one run of 100: {mean(totals['one']):.3f}  best of 2 x 50:"
          f" {mean(totals['two']):.3f}  best of 4 x 25: {mean(totals['four']):.3f}")


if __name__ == "__main__":
    main()
