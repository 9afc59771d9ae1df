#!/usr/bin/env python3
"""Writes a BERT-base-shaped encoder as an ONNX model with multi-head attention as exporters
write it (Vaswani et al., "Attention is all you need", 2017; BERT-base: hidden 768, 12 heads,
FFN 3072): per layer the Q, K and V projections are three branches from one input, split into
heads by Reshape and Transpose, QK^T scaled and softmaxed, times V, heads joined, the output
projection, residual Add and LayerNormalization, then the feed-forward block. Seeded random
weights, batch 1. Usage: make_attention.py OUT.onnx [LAYERS] [SEQ]"""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

rng = np.random.default_rng(1)
nodes, inits = [], []
HIDDEN, HEADS, FFN = 768, 12, 3072


def const(name, array):
    inits.append(numpy_helper.from_array(array, name))
    return name


def weight(name, *shape):
    return const(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))


def node(op, inputs, name, **attrs):
    nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
    return name


def linear(x, cin, cout, name):
    return node("Add", [node("MatMul", [x, weight(name + ".w", cin, cout)], name + ".mm"), weight(name + ".b", cout)],
                name)


def heads(x, seq, name):
    shaped = node("Reshape", [x, const(name + ".shape", np.array([1, seq, HEADS, HIDDEN // HEADS], np.int64))],
                  name + ".split")
    return node("Transpose", [shaped], name, perm=[0, 2, 1, 3])


def layer_norm(x, name):
    return node("LayerNormalization", [x, const(name + ".g", np.ones(HIDDEN, np.float32)),
                                       const(name + ".b", np.zeros(HIDDEN, np.float32))], name, axis=-1)


def encoder(x, seq, name):
    q = heads(linear(x, HIDDEN, HIDDEN, name + ".q"), seq, name + ".qh")
    k = heads(linear(x, HIDDEN, HIDDEN, name + ".k"), seq, name + ".kh")
    v = heads(linear(x, HIDDEN, HIDDEN, name + ".v"), seq, name + ".vh")
    kt = node("Transpose", [k], name + ".kt", perm=[0, 1, 3, 2])
    scores = node("Div", [node("MatMul", [q, kt], name + ".qk"),
                          const(name + ".scale", np.array(np.sqrt(HIDDEN // HEADS), np.float32))], name + ".scaled")
    probs = node("Softmax", [scores], name + ".probs", axis=-1)
    ctx = node("Transpose", [node("MatMul", [probs, v], name + ".pv")], name + ".ctx_t", perm=[0, 2, 1, 3])
    ctx = node("Reshape", [ctx, const(name + ".join", np.array([1, seq, HIDDEN], np.int64))], name + ".ctx")
    x = layer_norm(node("Add", [linear(ctx, HIDDEN, HIDDEN, name + ".o"), x], name + ".res1"), name + ".ln1")
    ffn = linear(node("Relu", [linear(x, HIDDEN, FFN, name + ".ffn1")], name + ".act"), FFN, HIDDEN, name + ".ffn2")
    return layer_norm(node("Add", [ffn, x], name + ".res2"), name + ".ln2")


def main():
    out = sys.argv[1]
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    seq = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    x = "input"
    for i in range(layers):
        x = encoder(x, seq, f"layer{i}")
    graph = helper.make_graph(nodes, "bert_base_attention", [helper.make_tensor_value_info("input", T.FLOAT, [1, seq, HIDDEN])],
                              [helper.make_tensor_value_info(x, T.FLOAT, [1, seq, HIDDEN])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, out)
    print(f"wrote {out}: {layers} encoder layers, seq {seq}, {len(nodes)} nodes")


if __name__ == "__main__":
    main()
