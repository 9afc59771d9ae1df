#!/usr/bin/env python3
"""Writes a DenseNet-121-shaped ONNX model (Huang et al., CVPR 2017: growth 32, bottleneck 4x,
blocks of 6/12/24/16 layers, compression 0.5) with seeded random weights, at batch 1, 224x224.
Each dense layer is BatchNormalization -> Relu -> Conv 1x1 -> BatchNormalization -> Relu ->
Conv 3x3 -> Concat, as torchvision exports it. Usage: make_densenet.py OUT.onnx [BLOCKS],
BLOCKS e.g. 6,12,48,32 for DenseNet-201 (default 6,12,24,16)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

rng = np.random.default_rng(121)
nodes, inits = [], []


def weight(name, *shape):
    inits.append(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.05, name))
    return name


def bn_relu(x, c, name):
    p = name + "."
    # A variance is positive (a negative one made every output NaN in ONNX Runtime).
    inits.append(numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), p + "v"))
    nodes.append(helper.make_node("BatchNormalization", [x, weight(p + "s", c), weight(p + "b", c),
                                                         weight(p + "m", c), p + "v"],
                                  [p + "bn"], name=name + ".norm"))
    nodes.append(helper.make_node("Relu", [p + "bn"], [p + "relu"], name=name + ".relu"))
    return p + "relu"


def conv(x, cin, cout, k, name, stride=1):
    nodes.append(helper.make_node("Conv", [x, weight(name + ".w", cout, cin, k, k)], [name + ".out"],
                                  pads=[k // 2] * 4, strides=[stride] * 2, name=name))
    return name + ".out"


x = conv("input", 3, 64, 7, "features.conv0", 2)
x = bn_relu(x, 64, "features.0")
nodes.append(helper.make_node("MaxPool", [x], ["pool0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4,
                              name="features.pool0"))
x, c = "pool0", 64
blocks = tuple(int(n) for n in (sys.argv[2] if len(sys.argv) > 2 else "6,12,24,16").split(","))
for b, layers in enumerate(blocks, 1):
    for l in range(1, layers + 1):
        name = "features.denseblock%d.denselayer%d" % (b, l)
        y = bn_relu(x, c, name + ".1")
        y = conv(y, c, 128, 1, name + ".conv1")
        y = bn_relu(y, 128, name + ".2")
        y = conv(y, 128, 32, 3, name + ".conv2")
        nodes.append(helper.make_node("Concat", [x, y], [name + ".cat"], axis=1, name=name + ".cat"))
        x, c = name + ".cat", c + 32
    if b < len(blocks):
        name = "features.transition%d" % b
        y = bn_relu(x, c, name)
        y = conv(y, c, c // 2, 1, name + ".conv")
        nodes.append(helper.make_node("AveragePool", [y], [name + ".pool"], kernel_shape=[2, 2], strides=[2, 2],
                                      name=name + ".pool"))
        x, c = name + ".pool", c // 2
x = bn_relu(x, c, "features.5")
nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"))
nodes.append(helper.make_node("Gemm", ["flat", weight("fc.w", 1000, c), weight("fc.b", 1000)], ["logits"],
                              transB=1, name="classifier"))
graph = helper.make_graph(nodes, "densenet121-like",
                          [helper.make_tensor_value_info("input", T.FLOAT, [1, 3, 224, 224])],
                          [helper.make_tensor_value_info("logits", T.FLOAT, [1, 1000])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8  # what ONNX Runtime 1.23 (up to 11) and Debian's libonnx read; onnx 1.19 writes 12
onnx.save(model, sys.argv[1])
print("%s: %d nodes" % (sys.argv[1], len(nodes)))
