#!/usr/bin/env python3
"""Writes an Inception-v1-shaped ONNX model (Szegedy et al., "Going deeper with convolutions",
CVPR 2015, table 1: the stem, nine inception modules of four branches - 1x1; 1x1 -> 3x3;
1x1 -> 5x5; 3x3 max pool -> 1x1 - joined by a Concat, max pools between stages, global
average pool and the classifier) with seeded random weights, batch 1, 224x224. --lrn adds
GoogLeNet's two LRNs (size 5, alpha 1e-4, beta 0.75, after pool1 and after conv2b), as the
ONNX model zoo's googlenet has them.
Usage: make_inception.py OUT.onnx [--lrn]"""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

rng = np.random.default_rng(1)
nodes, inits = [], []


def weight(name, *shape):
    inits.append(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.05, name))
    return name


def conv_relu(x, cin, cout, k, name, stride=1):
    pad = k // 2
    nodes.append(helper.make_node("Conv", [x, weight(name + ".w", cout, cin, k, k), weight(name + ".b", cout)],
                                  [name + ".conv"], pads=[pad] * 4, strides=[stride, stride], name=name))
    nodes.append(helper.make_node("Relu", [name + ".conv"], [name + ".relu"], name=name + ".relu"))
    return name + ".relu"


def max_pool(x, name, k=3, stride=2):
    nodes.append(helper.make_node("MaxPool", [x], [name], kernel_shape=[k, k], strides=[stride, stride],
                                  pads=[k // 2] * 4, name=name))
    return name


def inception(x, cin, c1, c3r, c3, c5r, c5, pp, name):
    b1 = conv_relu(x, cin, c1, 1, name + ".b1")
    b2 = conv_relu(conv_relu(x, cin, c3r, 1, name + ".b2a"), c3r, c3, 3, name + ".b2b")
    b3 = conv_relu(conv_relu(x, cin, c5r, 1, name + ".b3a"), c5r, c5, 5, name + ".b3b")
    b4 = conv_relu(max_pool(x, name + ".pool", 3, 1), cin, pp, 1, name + ".b4")
    nodes.append(helper.make_node("Concat", [b1, b2, b3, b4], [name + ".cat"], axis=1, name=name + ".cat"))
    return name + ".cat", c1 + c3 + c5 + pp


def lrn(x, name):
    if "--lrn" not in sys.argv:
        return x
    nodes.append(helper.make_node("LRN", [x], [name], size=5, alpha=1e-4, beta=0.75, bias=1.0, name=name))
    return name


x = conv_relu("input", 3, 64, 7, "conv1", 2)
x = lrn(max_pool(x, "pool1"), "norm1")
x = conv_relu(x, 64, 64, 1, "conv2a")
x = lrn(conv_relu(x, 64, 192, 3, "conv2b"), "norm2")
x = max_pool(x, "pool2")
c = 192
for name, cfg in [("3a", (64, 96, 128, 16, 32, 32)), ("3b", (128, 128, 192, 32, 96, 64)), ("pool3", None),
                  ("4a", (192, 96, 208, 16, 48, 64)), ("4b", (160, 112, 224, 24, 64, 64)),
                  ("4c", (128, 128, 256, 24, 64, 64)), ("4d", (112, 144, 288, 32, 64, 64)),
                  ("4e", (256, 160, 320, 32, 128, 128)), ("pool4", None),
                  ("5a", (256, 160, 320, 32, 128, 128)), ("5b", (384, 192, 384, 48, 128, 128))]:
    if cfg is None:
        x = max_pool(x, name)
    else:
        x, c = inception(x, c, *cfg, "inception" + name)
nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"))
nodes.append(helper.make_node("Gemm", ["flat", weight("fc.w", 1000, c), weight("fc.b", 1000)], ["logits"],
                              transB=1, name="fc"))
g = helper.make_graph(nodes, "inception-v1", [helper.make_tensor_value_info("input", T.FLOAT, [1, 3, 224, 224])],
                      [helper.make_tensor_value_info("logits", T.FLOAT, [1, 1000])], inits)
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8  # what ONNX Runtime 1.23 (up to 11) and Debian's libonnx read; onnx 1.19 writes 12
onnx.save(model, sys.argv[1])
print(f"{len(nodes)} nodes")
