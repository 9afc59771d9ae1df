#!/usr/bin/env python3
"""The figures of docs/decisions/host-conv-default-order-two.md: the host conv2d default
against the same schedule with the other tile order (0: panels outer in a pixel block; 2: the
micro-tiles walked pixel-major, a pixel row's inputs reused across the panels), one thread,
fp32, on the dev shapes (ResNet-50's convs) or held-out ones (Inception v1's, DenseNet-121's
and MobileNetV2's); the weight-block condition's dev shapes (VGG-16's convs: `vgg`) or its
held-out ones (a U-Net's at 256 x 256 and a YOLOv5-style neck's at 320 x 320: `unet`); each pair measured 3 times (atvoss.measure, 3 repeats), interleaved,
medians. Ratios are the other order's time over the default's (above 1: the default is faster).

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/host_conv_default_order.py [--set dev|heldout|vgg|unet]"""
import json

from atvoss import _atvoss

from default_pairs import paired_medians, parse_set_and_dtypes, print_summary

# (C, H, K, R, stride, epilogue)
BR = ["bias", "relu"]
BAR = ["bias", "add", "relu"]
DEV = [(3, 224, 64, 7, 2, BR), (64, 56, 64, 1, 1, BR), (64, 56, 64, 3, 1, BR), (64, 56, 256, 1, 1, BAR),
       (256, 56, 64, 1, 1, BR), (256, 56, 128, 1, 1, BR), (128, 56, 128, 3, 2, BR), (128, 28, 512, 1, 1, BAR),
       (512, 28, 128, 1, 1, BR), (128, 28, 128, 3, 1, BR), (512, 28, 1024, 1, 2, ["bias"]),
       (256, 14, 256, 3, 1, BR), (256, 14, 1024, 1, 1, BAR), (1024, 14, 256, 1, 1, BR),
       (512, 14, 512, 3, 2, BR), (512, 7, 2048, 1, 1, BAR), (2048, 7, 512, 1, 1, BR), (512, 7, 512, 3, 1, BR)]
HELDOUT = [(64, 56, 192, 3, 1, BR), (192, 28, 64, 1, 1, BR), (96, 28, 128, 3, 1, BR), (16, 28, 32, 5, 1, BR),
           (480, 14, 192, 1, 1, BR), (16, 14, 48, 5, 1, BR), (832, 7, 384, 1, 1, BR), (192, 7, 384, 3, 1, BR),
           (128, 56, 128, 1, 1, BR), (128, 56, 32, 3, 1, ["bias"]), (512, 28, 128, 1, 1, BR),
           (16, 112, 96, 1, 1, BR), (144, 56, 24, 1, 1, ["bias"]), (32, 28, 192, 1, 1, BR),
           (960, 7, 320, 1, 1, ["bias"]), (3, 224, 32, 3, 2, BR)]
VGG = [(3, 224, 64, 3, 1, BR), (64, 224, 64, 3, 1, BR), (64, 112, 128, 3, 1, BR), (128, 112, 128, 3, 1, BR),
       (128, 56, 256, 3, 1, BR), (256, 56, 256, 3, 1, BR), (256, 28, 512, 3, 1, BR), (512, 28, 512, 3, 1, BR)]
UNET = [(32, 256, 32, 3, 1, BR), (32, 128, 64, 3, 1, BR), (64, 128, 64, 3, 1, BR), (64, 64, 128, 3, 1, BR),
        (128, 64, 128, 3, 1, BR), (128, 32, 256, 3, 1, BR), (256, 32, 256, 3, 1, BR), (512, 32, 256, 3, 1, BR),
        (256, 64, 128, 3, 1, BR), (128, 128, 64, 3, 1, BR), (64, 256, 32, 3, 1, BR),
        (32, 80, 64, 3, 2, BR), (64, 40, 128, 3, 1, BR), (256, 40, 128, 3, 1, BR), (128, 80, 64, 1, 1, BR)]
SETS = {"dev": DEV, "heldout": HELDOUT, "vgg": VGG, "unet": UNET}


def main():
    args = parse_set_and_dtypes(SETS)
    ratios = []
    for c, h, k, r, stride, epilogue in SETS[args.set]:
        w = {"op": "conv2d", "dtype": "float32", "epilogue": epilogue,
             "dims": {"N": 1, "C": c, "H": h, "W": h, "K": k, "R": r, "S": r, "pad": r // 2, "stride": stride}}
        default = json.loads(_atvoss.default_schedule(json.dumps(w), "host"))
        other = dict(default, tile_order=2 if default["tile_order"] == 0 else 0)
        o, d = paired_medians(w, other, default, repeat=3)
        ratios.append(o / d)
        print("C=%4d H=%3d K=%4d %dx%d s%d  order %d %8.1f us  default (order %d) %8.1f us  %.2fx"
              % (c, h, k, r, r, stride, other["tile_order"], o, default["tile_order"], d, o / d), flush=True)
    print_summary(ratios)


if __name__ == "__main__":
    main()
