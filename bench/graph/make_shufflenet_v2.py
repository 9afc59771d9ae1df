#!/usr/bin/env python3
"""Writes ShuffleNet v2 1.0x (Ma et al., 2018) as torchvision's export writes it in eval mode
(each BatchNormalization folded into its conv's bias): a 3x3 stride-2 stem of 24 channels and a
3x3 stride-2 max pool; stages of 4, 8 and 4 units (116, 232 and 464 channels), each unit
splitting its channels in two (Split with a split input, opset 13), running one half through
1x1, 3x3 depthwise and 1x1 convs, concatenating, and shuffling the channels as
`channel_shuffle` does (Reshape to [N, 2, C/2, H, W], Transpose by [0, 2, 1, 3, 4], Reshape
back); a stride-2 unit runs both halves on the whole input. Then a 1x1 conv to 1024 channels,
the spatial mean (ReduceMean over H and W) and the classifier Gemm. Seeded random weights,
symbolic batch.
Usage: make_shufflenet_v2.py OUT.onnx"""
import os
import sys

import numpy as np
import onnx
from onnx import helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_mobilenet_v2 import Writer  # noqa: E402

STAGES = [(116, 4), (232, 8), (464, 4)]  # (output channels, units), torchvision's 1.0x


class ShuffleWriter(Writer):
    def conv(self, x, cin, cout, k, stride=1, group=1, relu=True):
        w = self.const(self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / (cin // group * k * k)))
        y = self.node("Conv", [x, w, self.const(self.rng.uniform(-0.1, 0.1, cout))], kernel_shape=[k, k],
                      strides=[stride, stride], pads=[k // 2] * 4, group=group, dilations=[1, 1])
        return self.node("Relu", [y]) if relu else y

    def shuffle(self, x, c, hw):
        y = self.node("Reshape", [x, self.ints([-1, 2, c // 2, hw, hw])])
        y = self.node("Transpose", [y], perm=[0, 2, 1, 3, 4])
        return self.node("Reshape", [y, self.ints([-1, c, hw, hw])])

    def branch(self, x, cin, cout, stride):
        y = self.conv(x, cin, cout, 1)
        y = self.conv(y, cout, cout, 3, stride, group=cout, relu=False)
        return self.conv(y, cout, cout, 1)

    def unit(self, x, cin, cout, stride, hw):
        half = cout // 2
        if stride == 1:
            self.count += 1
            keep, rest = "split_%d_a" % self.count, "split_%d_b" % self.count
            self.nodes.append(helper.make_node("Split", [x, self.ints([cin // 2, cin // 2])], [keep, rest], axis=1,
                                               name="split_%d" % self.count))
            return self.shuffle(self.node("Concat", [keep, self.branch(rest, half, half, 1)], axis=1), cout, hw), hw
        left = self.conv(self.conv(x, cin, cin, 3, 2, group=cin, relu=False), cin, half, 1)
        out = (hw + 1) // 2
        return self.shuffle(self.node("Concat", [left, self.branch(x, cin, half, 2)], axis=1), cout, out), out


def shufflenet_v2(seed=1):
    w = ShuffleWriter(seed)
    x = w.conv("input", 3, 24, 3, 2)
    x = w.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c, hw = 24, 56
    for cout, units in STAGES:
        for i in range(units):
            x, hw = w.unit(x, c, cout, 2 if i == 0 else 1, hw)
            c = cout
    x = w.node("ReduceMean", [w.conv(x, c, 1024, 1)], axes=[2, 3], keepdims=0)
    logits = w.node("Gemm", [x, w.const(w.rng.standard_normal((1000, 1024)) * 0.03), w.const(np.zeros(1000))],
                    transB=1)
    return w.model("shufflenet_v2", [("input", ["N", 3, 224, 224])], [(logits, ["N", 1000])])


if __name__ == "__main__":
    onnx.save(shufflenet_v2(), sys.argv[1])
