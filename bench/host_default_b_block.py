#!/usr/bin/env python3
"""The figures of docs/decisions/host-default-b-block-in-l2.md: the host matmul default (its
kc x nc block of B no larger than L2) against the same schedule with the widest nc of the space
(4096, the default before), on the shape it was chosen on (BERT-base's 128x768x3072 FFN matmul)
and held-out ones (square, tall, thin-M, wide-N); each pair measured 3 times (atvoss.measure,
3 repeats), interleaved, medians. Shapes the rule leaves unchanged are said so.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/host_default_b_block.py [--set dev|heldout]
       [--dtypes float32]"""
import json

from atvoss import _atvoss

from default_pairs import paired_medians, parse_set_and_dtypes, print_summary

DEV = [(128, 768, 3072)]
HELDOUT = [(4096, 4096, 4096), (64, 1024, 4096), (512, 1024, 4096), (1024, 512, 3072), (49, 2048, 8192),
           (2048, 2048, 4096)]


def main():
    args = parse_set_and_dtypes()
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
            o, nw = paired_medians(w, old, new, repeat=3)
            flop = 2.0 * m * k * n / 1e3
            ratios.append(o / nw)
            print("%-8s %5dx%5dx%5d  nc 4096 %6.1f GFLOP/s  default (nc %d) %6.1f GFLOP/s  %.2fx" % (
                dtype, m, k, n, flop / o, new["tile_n"], flop / nw, o / nw), flush=True)
    print_summary(ratios)


if __name__ == "__main__":
    main()
