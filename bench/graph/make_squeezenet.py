#!/usr/bin/env python3
"""Writes SqueezeNet 1.1 (Iandola et al., 2016) as torchvision's export writes it: a 3x3
stride-2 stem of 64 channels, max pools of 3x3 stride 2 with ceil_mode, eight Fire modules (a
1x1 squeeze conv, then 1x1 and 3x3 expand convs concatenated along the channels, each conv
with its bias and a ReLU), the final 1x1 conv to 1000 classes with its ReLU, global average
pool and Flatten. Seeded random weights, symbolic batch.
Usage: make_squeezenet.py OUT.onnx"""
import os
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_mobilenet_v2 import Writer  # noqa: E402

# (squeeze, expand) channels of each Fire module, and whether a max pool follows it.
FIRES = [(16, 64, False), (16, 64, True), (32, 128, False), (32, 128, True), (48, 192, False), (48, 192, False),
         (64, 256, False), (64, 256, False)]


class SqueezeWriter(Writer):
    def conv_relu(self, x, cin, cout, k, stride=1, pad=0):
        w = self.const(self.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k)))
        y = self.node("Conv", [x, w, self.const(self.rng.uniform(-0.1, 0.1, cout))], kernel_shape=[k, k],
                      strides=[stride, stride], pads=[pad] * 4)
        return self.node("Relu", [y])

    def max_pool(self, x):
        return self.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    def fire(self, x, cin, squeeze, expand):
        s = self.conv_relu(x, cin, squeeze, 1)
        return self.node("Concat", [self.conv_relu(s, squeeze, expand, 1), self.conv_relu(s, squeeze, expand, 3, pad=1)],
                         axis=1)


def squeezenet(seed=1):
    w = SqueezeWriter(seed)
    x, c = w.max_pool(w.conv_relu("input", 3, 64, 3, 2)), 64
    for squeeze, expand, pool in FIRES:
        x, c = w.fire(x, c, squeeze, expand), 2 * expand
        if pool:
            x = w.max_pool(x)
    x = w.conv_relu(x, c, 1000, 1)
    x = w.node("Flatten", [w.node("GlobalAveragePool", [x])], axis=1)
    return w.model("squeezenet", [("input", ["N", 3, 224, 224])], [(x, ["N", 1000])])


if __name__ == "__main__":
    onnx.save(squeezenet(), sys.argv[1])
