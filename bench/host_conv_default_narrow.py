#!/usr/bin/env python3
"""The figures of docs/decisions/host-conv-default-narrow.md: the host conv2d default (register
block no wider than K) against the same schedule with a two-vector block, on the dev shapes
(MobileNetV2's narrow 1x1 convs) and the held-out ones (SqueezeNet's squeeze convs, ShuffleNet
and EfficientNet-B0's narrow 1x1 convs), in fp32, bf16 and int8; each pair measured 3 times
(atvoss.measure, 5 repeats), interleaved, medians. Shapes the rule leaves unchanged are said so.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/host_conv_default_narrow.py [--set dev|heldout]
       [--dtypes float32,bfloat16,int8]"""
import json

from atvoss import _atvoss

from default_pairs import paired_medians, parse_set_and_dtypes, print_summary

DEV = [(32, 112, 16), (144, 56, 24), (96, 56, 24), (16, 112, 96)]
HELDOUT = [(96, 55, 16), (128, 55, 16), (256, 27, 32), (116, 28, 24), (240, 28, 40), (144, 56, 24)]


def main():
    args = parse_set_and_dtypes()
    ratios = []
    for dtype in args.dtypes.split(","):
        for c, h, k in DEV if args.set == "dev" else HELDOUT:
            w = {"op": "conv2d", "dtype": dtype, "epilogue": ["bias", "relu"],
                 "dims": {"N": 1, "C": c, "H": h, "W": h, "K": k, "R": 1, "S": 1, "pad": 0, "stride": 1}}
            new = json.loads(_atvoss.default_schedule(json.dumps(w), "host"))
            lanes = 16 if "avx512f" in open("/proc/cpuinfo").read() else 8
            old = dict(new, micro_n=max(new["micro_n"], 2 * lanes))
            if old == new:
                print("%-8s C=%4d H=%3d K=%3d  unchanged by the rule" % (dtype, c, h, k))
                continue
            o, n = paired_medians(w, old, new, repeat=5)
            ratios.append(o / n)
            print("%-8s C=%4d H=%3d K=%3d  two vectors %8.1f us  default %8.1f us  %.2fx" % (dtype, c, h, k, o, n, o / n),
                  flush=True)
    print_summary(ratios)


if __name__ == "__main__":
    main()
