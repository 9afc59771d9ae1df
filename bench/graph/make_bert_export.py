#!/usr/bin/env python3
"""Writes a BERT encoder as torch.onnx exports Hugging Face's BertModel at opset 13 with dynamic
axes: int64 input_ids, attention_mask and token_type_ids of [batch_size, sequence_length];
position ids sliced from a buffer by the sequence length read from Shape; the embeddings'
LayerNorm and every other one decomposed (ReduceMean, Sub, Pow, Sqrt, Div, as exported below
opset 17); the extended attention mask (Unsqueeze, Cast, Sub from 1, Mul by the dtype's lowest
value); heads split by Reshape to a shape Concat'ed from Shape and Gather; erf GELU; the
pooler (Gather of the first token, Gemm, Tanh). Seeded random weights.
Usage: make_bert_export.py OUT.onnx [LAYERS] [HIDDEN] [HEADS] [VOCAB]
(defaults 2 layers, BERT-base's 768 hidden and 12 heads, a 1000-word vocabulary)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper


class Writer:
    def __init__(self, seed=1):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, stem):
        self.count += 1
        return "/%s_%d" % (stem, self.count)

    def const(self, array, dtype=np.float32):
        n = self.name("const")
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=dtype), n))
        return n

    def ints(self, values):
        return self.const(values, np.int64)

    def weight(self, *shape):
        return self.const(self.rng.standard_normal(shape) * 0.02)

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out + "_node", **attrs))
        return out

    def dim(self, x, axis):  # Shape -> Gather -> Unsqueeze, a dim as a 1-element int64 tensor
        return self.node("Unsqueeze", [self.node("Gather", [self.node("Shape", [x]), self.ints(axis)], axis=0),
                                       self.ints([0])])

    def layer_norm(self, x, hidden):
        mean = self.node("ReduceMean", [x], axes=[-1])
        d = self.node("Sub", [x, mean])
        var = self.node("ReduceMean", [self.node("Pow", [d, self.const(2.0)])], axes=[-1])
        y = self.node("Div", [d, self.node("Sqrt", [self.node("Add", [var, self.const(1e-12)])])])
        return self.node("Add", [self.node("Mul", [y, self.const(1 + self.rng.uniform(-0.1, 0.1, hidden))]),
                                 self.const(self.rng.uniform(-0.1, 0.1, hidden))])

    def linear(self, x, n_in, n_out):
        return self.node("Add", [self.const(self.rng.uniform(-0.02, 0.02, n_out)),
                                 self.node("MatMul", [x, self.weight(n_in, n_out)])])

    def heads(self, x, heads, width):  # [B, S, H] -> [B, heads, S, width]
        shape = self.node("Concat", [self.dim(x, 0), self.dim(x, 1), self.ints([heads]), self.ints([width])], axis=0)
        return self.node("Transpose", [self.node("Reshape", [x, shape])], perm=[0, 2, 1, 3])

    def attention(self, x, mask, hidden, heads):
        width = hidden // heads
        q = self.heads(self.linear(x, hidden, hidden), heads, width)
        k = self.heads(self.linear(x, hidden, hidden), heads, width)
        v = self.heads(self.linear(x, hidden, hidden), heads, width)
        scores = self.node("Div", [self.node("MatMul", [q, self.node("Transpose", [k], perm=[0, 1, 3, 2])]),
                                   self.const(np.sqrt(width))])
        probs = self.node("Softmax", [self.node("Add", [scores, mask])], axis=-1)
        ctx = self.node("Transpose", [self.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        joined = self.node("Concat", [self.dim(x, 0), self.dim(x, 1), self.ints([hidden])], axis=0)
        return self.linear(self.node("Reshape", [ctx, joined]), hidden, hidden)

    def gelu(self, x):
        e = self.node("Erf", [self.node("Div", [x, self.const(1.4142135381698608)])])
        return self.node("Mul", [self.node("Mul", [x, self.node("Add", [e, self.const(1.0)])]), self.const(0.5)])

    def layer(self, x, mask, hidden, heads):
        x = self.layer_norm(self.node("Add", [self.attention(x, mask, hidden, heads), x]), hidden)
        ffn = self.linear(self.gelu(self.linear(x, hidden, 4 * hidden)), 4 * hidden, hidden)
        return self.layer_norm(self.node("Add", [ffn, x]), hidden)


def bert(layers=2, hidden=768, heads=12, vocab=1000, max_positions=512, seed=1):
    w = Writer(seed)
    positions = w.ints(np.arange(max_positions).reshape(1, -1))
    seq = w.dim("input_ids", 1)
    position_ids = w.node("Slice", [positions, w.ints([0]), seq, w.ints([1])])
    x = w.node("Gather", [w.weight(vocab, hidden), "input_ids"], axis=0)
    x = w.node("Add", [x, w.node("Gather", [w.weight(2, hidden), "token_type_ids"], axis=0)])
    x = w.node("Add", [x, w.node("Gather", [w.weight(max_positions, hidden), position_ids], axis=0)])
    x = w.layer_norm(x, hidden)
    m = w.node("Cast", [w.node("Unsqueeze", [w.node("Unsqueeze", ["attention_mask", w.ints([1])]), w.ints([2])])],
               to=T.FLOAT)
    mask = w.node("Mul", [w.node("Sub", [w.const(1.0), m]), w.const(np.finfo(np.float32).min)])
    for _ in range(layers):
        x = w.layer(x, mask, hidden, heads)
    first = w.node("Gather", [x, w.ints(0)], axis=1)
    pooled = w.node("Tanh", [w.node("Gemm", [first, w.weight(hidden, hidden), w.const(np.zeros(hidden))], transB=1)])
    dims = ["batch_size", "sequence_length"]
    inputs = [helper.make_tensor_value_info(n, T.INT64, dims) for n in ("input_ids", "attention_mask", "token_type_ids")]
    outputs = [helper.make_tensor_value_info("last_hidden_state", T.FLOAT, dims + [hidden]),
               helper.make_tensor_value_info("pooler_output", T.FLOAT, ["batch_size", hidden])]
    w.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="out_hidden"))
    w.nodes.append(helper.make_node("Identity", [pooled], ["pooler_output"], name="out_pooled"))
    model = helper.make_model(helper.make_graph(w.nodes, "bert", inputs, outputs, w.inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what ONNX Runtime 1.23 and Debian's libonnx read
    return model


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[2:]]
    onnx.save(bert(*args), sys.argv[1])
