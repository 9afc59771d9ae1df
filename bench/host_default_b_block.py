#!/usr/bin/env python3
"""The figures of docs/decisions/host-default-b-block-in-l2.md: the host matmul default (its
kc x nc block of B no larger than L2) against the same schedule with the widest nc of the space
(4096, the default before), on the shape it was chosen on (BERT-base's 128x768x3072 FFN matmul)
and held-out ones (square, tall, thin-M, wide-N); each pair measured 3 times (atvoss.measure,
3 repeats), interleaved, medians. Shapes the rule leaves unchanged are said so.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/host_default_b_block.py [--set dev|heldout]
       [--dtypes float32]"""
import argparse
import json
import statistics

import atvoss
from atvoss import _atvoss

DEV = [(128, 768, 3072)]
HELDOUT = [(4096, 4096, 4096), (64, 1024, 4096), (512, 1024, 4096), (1024, 512, 3072), (49, 2048, 8192),
           (2048, 2048, 4096)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", choices=["dev", "heldout"], default="heldout")
    parser.add_argument("--dtypes", default="float32")
    args = parser.parse_args()
    ratios = []
    for dtype in args.dtypes.split(","):
        for m, k, n in DEV if args.set == "dev" else HELDOUT:
            w = {"op": "matmul", "dtype": dtype, "dims": {"M": m, "K": k, "N": n}}
            new = json.loads(_atvoss.default_schedule(json.dumps(w), "host"))
            old = dict(new, tile_n=4096)
            if new.get("amx_tiles", 0) == 1:
                print("%-8s %5dx%5dx%5d  AMX tiles: their own default, unchanged by the rule" % (dtype, m, k, n))
                continue
            if old == new:
                print("%-8s %5dx%5dx%5d  unchanged by the rule" % (dtype, m, k, n))
                continue
            t_old, t_new = [], []
            for _ in range(3):
                a, b = atvoss.measure(w, "host", [old, new], repeat=3)
                t_old.append(a.time_us)
                t_new.append(b.time_us)
            o, nw = statistics.median(t_old), statistics.median(t_new)
            flop = 2.0 * m * k * n / 1e3
            ratios.append(o / nw)
            print("%-8s %5dx%5dx%5d  nc 4096 %6.1f GFLOP/s  default (nc %d) %6.1f GFLOP/s  %.2fx" % (
                dtype, m, k, n, flop / o, new["tile_n"], flop / nw, o / nw), flush=True)
    if ratios:
        print("geomean %.2fx, worst %.2fx" % (statistics.geometric_mean(ratios), min(ratios)))


if __name__ == "__main__":
    main()
