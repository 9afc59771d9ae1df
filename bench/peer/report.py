#!/usr/bin/python3
"""Merges the CSVs of bench_lofo, bench_recorded_spaces and optuna_peer.py into the peer tables.

Each CSV row: space,strategy,seed,frac_at_<b>...,ms_per_proposal. Prints, per strategy, the
mean fraction of optimum over the spaces at each budget (seeds averaged per space first),
the fraction at 100 evaluations per space, the lowest space at 100, and the mean wall time
per proposal. Only (space, seed) pairs present for every strategy are compared, so a
partial run never flatters one side.

Usage: report.py a.csv b.csv ... [--budgets 25,50,100,200]
"""
import argparse
import csv
import collections
import sys


def load(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            rows.extend(csv.DictReader(f))
    return rows


def bad_input(message):
    """One line on stderr and exit 2, as the project's tools answer bad input."""
    print(message, file=sys.stderr)
    sys.exit(2)


def load_numbers(paths, keys, cols):
    """[(row, the cols as floats)] of complete bench CSVs; a missing file, or a row without the
    keys or with a col that is not a number, is a one-line error (bad_input)."""
    out = []
    for path in paths:
        try:
            rows = load([path])
        except OSError as e:
            bad_input(f"{path}: cannot read: {e.strerror}")
        for n, row in enumerate(rows, start=2):
            try:
                if any(row[k] is None for k in keys):
                    raise KeyError
                out.append((row, tuple(float(row[c]) for c in cols)))
            except (KeyError, TypeError, ValueError):
                bad_input(f"{path}: line {n}: expected the columns {', '.join(keys + cols)}, the last"
                          f" {len(cols)} numbers (a complete bench_recorded_spaces CSV)")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--budgets", default="10,25,50,100,200")
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    rows = load(args.csv)
    by = collections.defaultdict(dict)  # strategy -> (space, seed) -> row
    for r in rows:
        by[r["strategy"]][(r["space"], r["seed"])] = r
    common = set.intersection(*(set(v) for v in by.values()))
    spaces = sorted({s for s, _ in common})
    strategies = sorted(by)
    seeds = sorted({int(seed) for _, seed in common})
    print("spaces: %d, seeds per space: %d (%s)" % (len(spaces), len(seeds), ",".join(map(str, seeds))))

    def mean_at(strategy, space, b):
        vals = [float(by[strategy][k]["frac_at_%d" % b]) for k in common if k[0] == space]
        return sum(vals) / len(vals)

    print("\nMean fraction of optimum over the spaces")
    print("%-24s" % "strategy" + "".join("%8d" % b for b in budgets) + "   min@100  ms/proposal")
    for s in strategies:
        line = "%-24s" % s
        for b in budgets:
            line += "%8.3f" % (sum(mean_at(s, sp, b) for sp in spaces) / len(spaces))
        low = min(mean_at(s, sp, 100) for sp in spaces) if 100 in budgets else float("nan")
        ms = [float(by[s][k]["ms_per_proposal"]) for k in common]
        line += "%10.3f %12.2f" % (low, sum(ms) / len(ms))
        print(line)

    # optuna_peer.py's duplicate-avoiding wrapper: how often it evaluated a random configuration.
    for s in strategies:
        if all(by[s][k].get("escapes") for k in common):
            esc = sum(int(by[s][k]["escapes"]) for k in common)
            asks = sum(int(by[s][k]["asks"]) for k in common)
            print("%s: %d asks, %d random escapes over %d runs" % (s, asks, esc, len(common)))
    print("\nFraction of optimum at 100 evaluations per space")
    print("%-26s" % "space" + "".join("%14s" % s[:13] for s in strategies))
    for sp in spaces:
        print("%-26s" % sp + "".join("%14.3f" % mean_at(s, sp, 100) for s in strategies))


if __name__ == "__main__":
    main()
