#!/usr/bin/env python3
"""Round 9's comparison of two screens (search/README.md, round 9).

  families.py BASE.csv OTHER.csv

Both are bench_recorded_spaces CSVs of the nine recorded spaces (screen.sh writes them as
$TMPDIR/round8_LABEL.all.csv). Prints each space's mean fraction at 25/50/100/200, each
family's score (the mean of the four, families weighted equally, as bench_lofo scores a grid
point), and the score over the four families other than convolution_milo: the families that
choose convolution_milo's setting in the rotation.
"""
import collections, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from report import bad_input, load_numbers  # bench/peer/report.py: the peer tables' CSV reader

COLS = ("frac_at_25", "frac_at_50", "frac_at_100", "frac_at_200")


def load(path):
    runs = collections.defaultdict(list)
    for row, fracs in load_numbers([path], ("space",), COLS):
        runs[row["space"]].append(fracs)
    return {s: [sum(r[i] for r in v) / len(v) for i in range(len(COLS))] for s, v in runs.items()}


def family_scores(spaces):
    fam = collections.defaultdict(list)
    for s, means in spaces.items():
        fam[s.rsplit("-", 1)[0]].append(sum(means) / len(means))
    return {f: sum(v) / len(v) for f, v in fam.items()}


def main():
    if len(sys.argv) != 3:
        bad_input("usage: families.py BASE.csv OTHER.csv")
    a, b = load(sys.argv[1]), load(sys.argv[2])
    for s in sorted(a):
        print(f"{s:26s} " + " ".join(f"{x:.3f}" for x in a[s]) + "  |  " + " ".join(f"{x:.3f}" for x in b.get(s, [])))
    fa, fb = family_scores(a), family_scores(b)
    for f in sorted(fa):
        print(f"{f:26s} {fa[f]:.4f}  |  {fb.get(f, float('nan')):.4f}")
    other = [f for f in fa if f != "convolution_milo"]
    print("the other four families: %.4f  |  %.4f" % (sum(fa[f] for f in other) / len(other),
                                                       sum(fb[f] for f in other) / len(other)))


if __name__ == "__main__":
    main()
