#!/usr/bin/env python3
"""The figures of docs/decisions/host-depthwise-rows.md: the host depthwise_conv2d default
schedule's time (atvoss.measure, medians of --rounds rounds of 5 repeats) on one and two
threads, on the shapes the kernel was written against (dev: MobileNetV2's depthwise convs, 3x3)
or on held-out ones (EfficientNet-B0's, 3x3 and 5x5, and ShuffleNet's stride-2 3x3). Run it on
two builds (for example before and after a kernel change) to compare them.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/host_depthwise_shapes.py [--set dev|heldout]
       [--rounds 3]"""
import argparse
import json
import statistics

import atvoss
from atvoss import _atvoss

# (channels, input height = width, stride, window)
DEV = [(32, 112, 1, 3), (96, 112, 2, 3), (144, 56, 1, 3), (144, 56, 2, 3), (192, 28, 1, 3), (192, 28, 2, 3),
       (384, 14, 1, 3), (576, 14, 1, 3), (576, 14, 2, 3), (960, 7, 1, 3)]
HELDOUT = [(144, 56, 2, 5), (240, 28, 1, 5), (240, 28, 2, 3), (480, 14, 1, 3), (480, 14, 1, 5), (672, 14, 2, 5),
           (1152, 7, 1, 5), (1152, 7, 1, 3), (24, 56, 2, 3), (116, 28, 2, 3)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", choices=["dev", "heldout"], default="heldout")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    totals = {1: 0.0, 2: 0.0}
    for c, h, stride, k in DEV if args.set == "dev" else HELDOUT:
        w = {"op": "depthwise_conv2d", "dtype": "float32", "epilogue": ["bias", "relu6"],
             "dims": {"N": 1, "C": c, "H": h, "W": h, "R": k, "S": k, "pad": k // 2, "stride": stride}}
        default = json.loads(_atvoss.default_schedule(json.dumps(w), "host"))
        schedules = [dict(default, threads=t) for t in (1, 2)]
        runs = [atvoss.measure(w, "host", schedules, repeat=5) for _ in range(args.rounds)]
        us = [statistics.median(r[i].time_us for r in runs) for i in range(2)]
        totals[1] += us[0]
        totals[2] += us[1]
        print("C=%4d H=%3d stride %d %dx%d   1 thread %8.1f us   2 threads %8.1f us" % (c, h, stride, k, k, us[0], us[1]),
              flush=True)
    print("sum: 1 thread %.1f us, 2 threads %.1f us" % (totals[1], totals[2]))


if __name__ == "__main__":
    main()
