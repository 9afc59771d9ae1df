#!/usr/bin/env python3
"""Writes a ResNet-50-shaped ONNX model as torchvision exports it (He et al., "Deep Residual
Learning for Image Recognition", CVPR 2016, table 1; v1.5: the stride on each bottleneck's 3x3
conv): a 7x7 stride-2 stem conv without bias, BatchNormalization, ReLU, a 3x3 stride-2 max pool,
bottlenecks of [3, 4, 6, 3] blocks (1x1, 3x3, 1x1 convs, each with BatchNormalization; a 1x1
downsample conv on the first block of a stage), the residual Add and ReLU, a global average pool,
Flatten and a Gemm with transB=1. Seeded random weights scaled to keep activations bounded;
opset 13, the batch a symbolic dim. Usage: make_resnet50.py OUT.onnx [--classes N] [--size S]"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--classes", type=int, default=1000)
parser.add_argument("--size", type=int, default=224)
args = parser.parse_args()

rng = np.random.default_rng(50)
nodes, inits = [], []


def tensor(name, array):
    inits.append(numpy_helper.from_array(array.astype(np.float32), name))
    return name


def conv_bn(x, cin, cout, k, name, stride=1, relu=True):
    fan_in = cin * k * k
    w = tensor(name + ".weight", rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / fan_in))
    nodes.append(helper.make_node("Conv", [x, w], [name + ".conv"], kernel_shape=[k, k], pads=[k // 2] * 4,
                                  strides=[stride, stride], dilations=[1, 1], group=1, name=name))
    bn = [tensor(name + ".bn." + p, a) for p, a in [("weight", rng.uniform(0.5, 1.0, cout)),
                                                    ("bias", rng.uniform(-0.1, 0.1, cout)),
                                                    ("running_mean", rng.uniform(-0.1, 0.1, cout)),
                                                    ("running_var", rng.uniform(0.8, 1.2, cout))]]
    nodes.append(helper.make_node("BatchNormalization", [name + ".conv"] + bn, [name + ".bn"], epsilon=1e-5,
                                  momentum=0.9, name=name + ".bn"))
    if not relu:
        return name + ".bn"
    nodes.append(helper.make_node("Relu", [name + ".bn"], [name + ".relu"], name=name + ".relu"))
    return name + ".relu"


def bottleneck(x, cin, width, stride, name):
    out = width * 4
    y = conv_bn(x, cin, width, 1, name + ".conv1")
    y = conv_bn(y, width, width, 3, name + ".conv2", stride)
    y = conv_bn(y, width, out, 1, name + ".conv3", relu=False)
    skip = conv_bn(x, cin, out, 1, name + ".downsample", stride, relu=False) if stride != 1 or cin != out else x
    nodes.append(helper.make_node("Add", [y, skip], [name + ".add"], name=name + ".add"))
    nodes.append(helper.make_node("Relu", [name + ".add"], [name + ".out"], name=name + ".out"))
    return name + ".out", out


x = conv_bn("input", 3, 64, 7, "conv1", 2)
nodes.append(helper.make_node("MaxPool", [x], ["maxpool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                              ceil_mode=0, name="maxpool"))
x, c = "maxpool", 64
for stage, (blocks, width) in enumerate([(3, 64), (4, 128), (6, 256), (3, 512)], start=1):
    for b in range(blocks):
        x, c = bottleneck(x, c, width, 2 if b == 0 and stage > 1 else 1, "layer%d.%d" % (stage, b))
nodes.append(helper.make_node("GlobalAveragePool", [x], ["avgpool"], name="avgpool"))
nodes.append(helper.make_node("Flatten", ["avgpool"], ["flatten"], axis=1, name="flatten"))
fc_w = tensor("fc.weight", rng.standard_normal((args.classes, c)) * np.sqrt(1.0 / c))
fc_b = tensor("fc.bias", rng.uniform(-0.1, 0.1, args.classes))
nodes.append(helper.make_node("Gemm", ["flatten", fc_w, fc_b], ["logits"], alpha=1.0, beta=1.0, transB=1, name="fc"))
graph = helper.make_graph(nodes, "resnet50",
                          [helper.make_tensor_value_info("input", T.FLOAT, ["batch", 3, args.size, args.size])],
                          [helper.make_tensor_value_info("logits", T.FLOAT, ["batch", args.classes])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="atvoss-bench")
model.ir_version = 8  # what ONNX Runtime and Debian's libonnx both read
onnx.checker.check_model(model)
onnx.save(model, args.out)
print("%s: %d nodes" % (args.out, len(nodes)))
