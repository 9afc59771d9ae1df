#!/usr/bin/env python3
"""Writes MobileNetV2 (Sandler et al., 2018) as torchvision's export structure writes it: a
3x3 stride-2 stem, inverted residual blocks (1x1 expansion by 6, 3x3 depthwise, 1x1 linear
projection, a residual Add where stride 1 keeps the width), ReLU6 as Clip(0, 6) with min and
max inputs (opset 11+), BatchNormalization after every conv, the 1280-wide head, global
average pool, Flatten and the classifier Gemm. Seeded random weights, symbolic batch.
Usage: make_mobilenet_v2.py OUT.onnx"""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

# (expansion t, width c, repeats n, first stride s), torchvision's inverted_residual_setting.
SETTING = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


class Writer:
    def __init__(self, seed=1):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, array):
        self.count += 1
        name = "c%d" % self.count
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=np.float32), name))
        return name

    def ints(self, values):
        self.count += 1
        name = "i%d" % self.count
        self.inits.append(numpy_helper.from_array(np.asarray(values, dtype=np.int64), name))
        return name

    def model(self, name, inputs, outputs, opset=13):
        """The model of the nodes written: inputs and outputs as (name, shape or None), floats."""
        graph = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info(n, T.FLOAT, s) for n, s in inputs],
                                  [helper.make_tensor_value_info(n, T.FLOAT, s) for n, s in outputs], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8  # what ONNX Runtime 1.23 and Debian's libonnx read
        return m

    def node(self, op, inputs, **attrs):
        self.count += 1
        out = "%s_%d" % (op.lower(), self.count)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv_bn(self, x, cin, cout, k, stride=1, group=1, relu6=True):
        w = self.const(self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / (cin // group * k * k)))
        y = self.node("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=group)
        y = self.node("BatchNormalization", [y, self.const(self.rng.uniform(0.5, 1.5, cout)),
                                             self.const(self.rng.uniform(-0.1, 0.1, cout)),
                                             self.const(self.rng.uniform(-0.1, 0.1, cout)),
                                             self.const(self.rng.uniform(0.5, 1.5, cout))], epsilon=1e-5)
        return self.node("Clip", [y, self.const(0.0), self.const(6.0)]) if relu6 else y

    def block(self, x, cin, cout, stride, t):
        y = self.conv_bn(x, cin, cin * t, 1) if t != 1 else x
        y = self.conv_bn(y, cin * t, cin * t, 3, stride, group=cin * t)
        y = self.conv_bn(y, cin * t, cout, 1, relu6=False)
        return self.node("Add", [x, y]) if stride == 1 and cin == cout else y


def mobilenet_v2(seed=1):
    w = Writer(seed)
    x, c = w.conv_bn("input", 3, 32, 3, 2), 32
    for t, cout, n, s in SETTING:
        for i in range(n):
            x, c = w.block(x, c, cout, s if i == 0 else 1, t), cout
    x = w.conv_bn(x, c, 1280, 1)
    x = w.node("Flatten", [w.node("GlobalAveragePool", [x])], axis=1)
    logits = w.node("Gemm", [x, w.const(w.rng.standard_normal((1000, 1280)) * 0.03), w.const(np.zeros(1000))],
                    transB=1)
    return w.model("mobilenet_v2", [("input", ["N", 3, 224, 224])], [(logits, ["N", 1000])])


if __name__ == "__main__":
    onnx.save(mobilenet_v2(), sys.argv[1])
