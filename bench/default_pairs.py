"""The measurement behind the host default records' "old against new" tables
(docs/decisions/host-*.md): a schedule pair measured `rounds` times, interleaved, each time
`repeat` repeats through atvoss.measure; both medians."""
import argparse
import statistics

import atvoss


def parse_set_and_dtypes(sets=("dev", "heldout")):
    """--set (the shapes a rule was chosen on, or those held out: dev and heldout, or the
    script's own sets) and --dtypes."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", choices=list(sets), default="heldout")
    parser.add_argument("--dtypes", default="float32")
    return parser.parse_args()


def paired_medians(workload, old, new, rounds=3, repeat=3):
    t_old, t_new = [], []
    for _ in range(rounds):
        a, b = atvoss.measure(workload, "host", [old, new], repeat=repeat)
        t_old.append(a.time_us)
        t_new.append(b.time_us)
    return statistics.median(t_old), statistics.median(t_new)


def print_summary(ratios):
    if ratios:
        print("geomean %.2fx, worst %.2fx" % (statistics.geometric_mean(ratios), min(ratios)))
