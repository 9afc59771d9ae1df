"""Whole ONNX models run by atvoss (atvoss.runtime.Model, docs/engine.md) against ONNX Runtime,
the peers' environment's (scripts/setup.sh): every output within 1e-4 relative
(|a - r| / max(|r|, 1)). The models are built here with the constructs exporters write: every
attribute the ops allow (per-side pads, auto_pad, strides and dilations per axis, groups,
ceil_mode, count_include_pad, transA/transB/alpha/beta, axis), symbolic batch dims, opset 11
and 13 semantics, and the fusion patterns (Conv-BN-ReLU-Add, MatMul-bias-GELU, x*sigmoid(x))."""
import pathlib
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import AttributeProto, TensorProto as T, helper, numpy_helper

import atvoss
import atvoss.runtime as rt

RNG = np.random.default_rng(7)


class Builder:
    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, array, name=None):
        self.count += 1
        name = name or "c%d" % self.count
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=np.float32), name))
        return name

    def qint(self, values, dtype=T.UINT8, shape=None):
        """An integer constant of ONNX type dtype (a zero point: uint8, int8, int32), shape shape."""
        self.count += 1
        name = "q%d" % self.count
        array = np.asarray(values, dtype=helper.tensor_dtype_to_np_dtype(dtype))
        self.inits.append(numpy_helper.from_array(array.reshape(shape) if shape is not None else array, name))
        return name

    def ints(self, values):
        self.count += 1
        name = "i%d" % self.count
        self.inits.append(numpy_helper.from_array(np.asarray(values, dtype=np.int64), name))
        return name

    def node(self, op, inputs, **attrs):
        self.count += 1
        out = "%s_%d" % (op.lower(), self.count)
        self.nodes.append(helper.make_node(op, inputs, [out], name="n%d_%s" % (self.count, op), **attrs))
        return out

    def conv(self, x, cin, cout, k, bias=True, group=1, **attrs):
        kh, kw = (k, k) if isinstance(k, int) else k
        w = self.const(RNG.standard_normal((cout, cin // group, kh, kw)) * np.sqrt(2.0 / (cin // group * kh * kw)))
        ins = [x, w] + ([self.const(RNG.uniform(-0.1, 0.1, cout))] if bias else [])
        return self.node("Conv", ins, group=group, kernel_shape=[kh, kw], **attrs)

    def erf_gelu(self, x):
        """torch's nn.GELU below opset 20: x * (1 + erf(x / sqrt 2)) * 0.5."""
        erf = self.node("Erf", [self.node("Div", [x, self.const(2 ** 0.5)])])
        return self.node("Mul", [self.node("Mul", [x, self.node("Add", [erf, self.const(1.0)])]), self.const(0.5)])

    def bn(self, x, c):
        return self.node("BatchNormalization", [x, self.const(RNG.uniform(0.5, 1.5, c)),
                                                self.const(RNG.uniform(-0.1, 0.1, c)),
                                                self.const(RNG.uniform(-0.1, 0.1, c)),
                                                self.const(RNG.uniform(0.5, 1.5, c))], epsilon=1e-3)

    def save(self, path, inputs, outputs, opset=13):
        graph = helper.make_graph(self.nodes, "test", [helper.make_tensor_value_info(n, T.FLOAT, s) for n, s in inputs],
                                  [helper.make_tensor_value_info(o, T.FLOAT, None) for o in outputs], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8  # what ONNX Runtime and Debian's libonnx both read
        onnx.save(model, path)
        return path


# int8 kernels run where the CPU has AVX-512 VNNI; elsewhere those steps stay fp32. Where it has
# AMX too, products of rows (1x1 convs of stride 1, MatMulInteger) run on the int8 matmul's tiles.
with open("/proc/cpuinfo") as _f:
    _FLAGS = _f.read().split()
    VNNI = "avx512_vnni" in _FLAGS
    AMX = "amx_int8" in _FLAGS and "amx_tile" in _FLAGS


def compare(path, batch=1, threads=2, dims=None, input_shapes=None):
    model = rt.Model(path, batch=batch, threads=threads, dims=dims, input_shapes=input_shapes)
    inputs = [RNG.uniform(-1, 1, shape).astype(np.float32) for _, shape in model.inputs]
    ours = model.run(inputs)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    theirs = session.run([n for n, _ in model.outputs], {n: x for (n, _), x in zip(model.inputs, inputs)})
    assert len(ours) == len(theirs)
    for (name, _), a, r in zip(model.outputs, ours, theirs):
        assert a.shape == r.shape and a.dtype == r.dtype, name
        error = float(np.max(np.abs(a - r) / np.maximum(np.abs(r), 1), initial=0.0))
        assert error <= 1e-4, "%s: max relative error %.3g" % (name, error)
    return model


def test_conv_bn_relu_residual_blocks_at_a_symbolic_batch(tmp_path):
    b = Builder()
    x = b.conv("x", 8, 16, 3, bias=False, pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1])
    x = b.node("Relu", [b.bn(x, 16)])
    y = b.bn(b.conv(x, 16, 16, 3, bias=False, pads=[1, 1, 1, 1]), 16)
    skip = b.bn(b.conv(x, 16, 16, 1, bias=False), 16)  # listed after the branch the Add fuses into
    out = b.node("Relu", [b.node("Add", [y, skip])])
    out = b.node("Mul", [out, b.const(RNG.uniform(0.5, 1.5, (1, 16, 1, 1)))])
    path = b.save(str(tmp_path / "res.onnx"), [("x", ["N", 8, 12, 10])], [out])
    m = compare(path, batch=2)
    kinds = [s["kind"] for s in m.describe()["steps"]]
    assert kinds.count("kernel") == 3  # the BNs folded, the ReLUs and the Add fused


def test_every_conv_attribute(tmp_path):
    b = Builder()
    x = "x"
    outs = [
        b.conv(x, 8, 8, 3, pads=[0, 1, 1, 0]),                         # per-side pads
        b.conv(x, 8, 6, (3, 5), pads=[1, 2, 1, 2], strides=[2, 1]),   # a stride per axis
        b.conv(x, 8, 8, 3, pads=[2, 2, 2, 2], dilations=[2, 2]),      # dilated
        b.conv(x, 8, 8, 3, group=2, pads=[1, 1, 1, 1]),                # grouped
        b.conv(x, 8, 8, 3, group=8, pads=[1, 1, 1, 1]),                # depthwise
        b.conv(x, 8, 8, 3, group=8, strides=[2, 2], pads=[1, 1, 1, 1]),
        b.conv(x, 8, 4, 4, auto_pad="SAME_UPPER", strides=[2, 2]),
        b.conv(x, 8, 4, 3, auto_pad="SAME_LOWER"),
        b.conv(x, 8, 4, 3, auto_pad="VALID"),
        b.conv(x, 8, 16, 1, bias=False, strides=[2, 2]),
    ]
    path = b.save(str(tmp_path / "convs.onnx"), [("x", [1, 8, 11, 13])], outs)
    compare(path)


def test_every_pool_attribute(tmp_path):
    b = Builder()
    c = b.node("Relu", [b.conv("x", 4, 8, 3, pads=[1, 1, 1, 1])])  # pools of a conv's NHWC output too
    outs = []
    for src in ["x", c]:
        outs += [
            b.node("MaxPool", [src], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
            b.node("MaxPool", [src], kernel_shape=[2, 3], strides=[1, 2], pads=[0, 1, 1, 0]),
            b.node("MaxPool", [src], kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 1, 1, 1]),
            b.node("MaxPool", [src], kernel_shape=[3, 3], auto_pad="SAME_UPPER", strides=[2, 2]),
            b.node("AveragePool", [src], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                   count_include_pad=1),
            b.node("AveragePool", [src], kernel_shape=[3, 3], strides=[2, 2], pads=[0, 1, 1, 0],
                   count_include_pad=0, ceil_mode=1),
            b.node("GlobalAveragePool", [src]),
            b.node("GlobalMaxPool", [src]),
        ]
    path = b.save(str(tmp_path / "pools.onnx"), [("x", [2, 4, 13, 11])], outs, opset=17)
    compare(path)


def test_concat_views_channel_shuffle_and_a_classifier(tmp_path):
    b = Builder()
    left = b.node("Relu", [b.conv("x", 8, 8, 1)])
    right = b.node("Relu", [b.conv("x", 8, 8, 3, pads=[1, 1, 1, 1])])
    cat = b.node("Concat", [left, right], axis=1)
    shuffled = b.node("Reshape", [cat, b.ints([1, 2, 8, 6, 6])])
    shuffled = b.node("Transpose", [shuffled], perm=[0, 2, 1, 3, 4])
    shuffled = b.node("Reshape", [shuffled, b.ints([1, 16, 6, 6])])
    plain_cat = b.node("Concat", [shuffled, "x"], axis=-3)
    pooled = b.node("GlobalAveragePool", [plain_cat])
    flat = b.node("Flatten", [pooled], axis=1)
    logits = b.node("Gemm", [flat, b.const(RNG.standard_normal((10, 24))), b.const(RNG.standard_normal(10))],
                    transB=1, alpha=0.5, beta=2.0)
    logits2 = b.node("Gemm", [flat, b.const(RNG.standard_normal((24, 10))), b.const(RNG.standard_normal((1, 10)))])
    probs = b.node("Softmax", [b.node("Cast", [b.node("Add", [logits, logits2])], to=T.FLOAT)], axis=-1)
    squeezed = b.node("Squeeze", [b.node("Unsqueeze", [probs, b.ints([0])]), b.ints([0])])
    path = b.save(str(tmp_path / "classic.onnx"), [("x", [1, 8, 6, 6])], [squeezed, plain_cat])
    compare(path)


def test_shapes_computed_in_the_graph_at_every_batch(tmp_path):
    # torch.onnx's x.view(x.size(0), -1) and x.expand(...) at a dynamic batch: integer arithmetic
    # on Shape, folded at the bound batch (frontend/shape_folding.hpp).
    b = Builder()
    x = b.node("Relu", [b.conv("x", 8, 8, 3, pads=[1, 1, 1, 1])])
    n = b.node("Gather", [b.node("Shape", [x]), b.ints(0)], axis=0)
    shape = b.node("Concat", [b.node("Unsqueeze", [n, b.ints([0])]), b.ints([-1])], axis=0)
    flat = b.node("Reshape", [x, shape])
    half = b.node("Div", [b.node("Gather", [b.node("Shape", [flat]), b.ints(1)], axis=0), b.ints(2)])
    halves = b.node("Concat", [b.node("Unsqueeze", [n, b.ints([0])]), b.ints([2]),
                               b.node("Unsqueeze", [half, b.ints([0])])], axis=0)
    split = b.node("Reshape", [flat, halves])
    path = b.save(str(tmp_path / "view.onnx"), [("x", ["N", 8, 6, 6])], [split])
    for batch in (1, 3):
        model = compare(path, batch=batch)
        assert model.outputs[0][1] == (batch, 2, 144)


def test_shape_and_size_as_outputs_and_operands(tmp_path):
    # Shape (opset 15's start and end, negative and past the rank) and Size read from the
    # bound shapes, as graph outputs (a detector's counts) and as what a step reads.
    b = Builder()
    y = b.node("Relu", ["x"])
    outs = [b.node("Shape", [y]), b.node("Shape", [y], start=1), b.node("Shape", [y], start=-2, end=9),
            b.node("Shape", [y], start=-9, end=-1), b.node("Shape", [y], start=3, end=1), b.node("Size", [y])]
    outs.append(b.node("Mul", [y, b.node("Cast", [b.node("Size", ["x"])], to=T.FLOAT)]))
    graph = helper.make_graph(b.nodes, "shapes", [helper.make_tensor_value_info("x", T.FLOAT, ["N", 3, 4])],
                              [helper.make_tensor_value_info(o, T.INT64, None) for o in outs[:-1]] +
                              [helper.make_tensor_value_info(outs[-1], T.FLOAT, None)], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    path = str(tmp_path / "shapes.onnx")
    onnx.save(model, path)
    for batch in (1, 2):
        m = compare(path, batch=batch)
        assert [tuple(s) for _, s in m.outputs[:6]] == [(3,), (2,), (2,), (2,), (0,), ()]


def test_an_input_no_node_reads_is_still_an_input(tmp_path):
    # Exporters keep an argument the traced code ignored (a mask, token types) as a graph input:
    # ONNX Runtime takes it, so the engine lists it in the graph's order and leaves it unread.
    b = Builder()
    y = b.node("Relu", ["x"])
    path = b.save(str(tmp_path / "unused.onnx"), [("x", ["N", 3]), ("mask", ["N", 3]), ("z", [2])], [y])
    m = compare(path, batch=2)
    assert [(n, tuple(s)) for n, s in m.inputs] == [("x", (2, 3)), ("mask", (2, 3)), ("z", (2,))]


def test_symbolic_dims_bound_from_the_shapes_inputs_are_fed_at(tmp_path):
    # A fully convolutional model of [N, 3, H, W], bound as ONNX Runtime binds it from the array.
    b = Builder()
    y = b.node("Relu", [b.conv("x", 3, 4, 3, pads=[1, 1, 1, 1])])
    path = b.save(str(tmp_path / "fcn.onnx"), [("x", ["N", 3, "H", "W"])], [b.node("MaxPool", [y], kernel_shape=[2, 2],
                                                                                      strides=[2, 2])])
    m = compare(path, input_shapes={"x": (2, 3, 10, 14)})
    assert m.inputs == [("x", (2, 3, 10, 14))] and m.outputs[0][1] == (2, 4, 5, 7)
    with pytest.raises(ValueError, match="dim 'H' is 10 in input 'x' and 8 elsewhere"):
        rt.Model(path, dims={"H": 8}, input_shapes={"x": (2, 3, 10, 14)})
    with pytest.raises(ValueError, match="input 'x': dim 2 of the shape given for it is 0"):
        rt.Model(path, input_shapes={"x": (2, 3, 0, 14)})
    with pytest.raises(ValueError, match=r"input_shapes\['x'\]: expected a sequence of whole numbers"):
        rt.Model(path, input_shapes={"x": (2, 3, "10", 14)})


def test_mobilenet_v3_squeeze_excitation_block(tmp_path):
    b = Builder()
    x = b.node("HardSwish", [b.bn(b.conv("x", 16, 16, 3, bias=False, group=16, pads=[1, 1, 1, 1]), 16)])
    s = b.node("Relu", [b.conv(b.node("GlobalAveragePool", [x]), 16, 8, 1)])
    s = b.node("HardSigmoid", [b.conv(s, 8, 16, 1)], alpha=1.0 / 6, beta=0.5)
    y = b.conv(b.node("Mul", [x, s]), 16, 24, 1)
    compare(b.save(str(tmp_path / "se.onnx"), [("x", ["N", 16, 14, 14])], [y], opset=14), batch=2)


def test_activations_fused_into_convs_and_matmuls_as_exporters_write_them(tmp_path):
    # YOLOv3's LeakyRelu(0.1), ArcFace's PRelu (slopes [K, 1, 1], and one shared), ESPCN's Tanh,
    # MobileNetV3's HardSwish, YOLOv4's Mish: each computed in its conv's or matmul's kernel. A
    # PRelu whose slopes lie along W (shape [W], W the channel count too) is not per channel: it
    # runs after the kernel.
    b = Builder()
    x = b.conv("x", 8, 16, 3, pads=[1, 1, 1, 1])
    leaky = b.node("LeakyRelu", [b.bn(b.conv("x", 8, 16, 3, bias=False, pads=[1, 1, 1, 1]), 16)], alpha=0.1)
    prelu = b.node("PRelu", [b.conv(leaky, 16, 16, 1), b.const(RNG.uniform(0.0, 0.5, (16, 1, 1)))])
    shared = b.node("PRelu", [b.conv(prelu, 16, 16, 3, group=16, pads=[1, 1, 1, 1]), b.const([0.25])])
    along_w = b.node("PRelu", [b.conv(shared, 16, 9, 1), b.const(RNG.uniform(0.0, 0.5, 9))])  # 9 channels, W 9
    tanh = b.node("Tanh", [b.conv(x, 16, 16, 3, pads=[1, 1, 1, 1])])
    swish = b.node("HardSwish", [b.node("Add", [b.conv(tanh, 16, 16, 1), x])])  # the residual, then HardSwish
    mish = b.node("Mul", [b.conv(swish, 16, 16, 3, pads=[1, 1, 1, 1]),
                          b.node("Tanh", [b.node("Softplus", [b.conv(swish, 16, 16, 1)])])])  # Mish unfolded
    mish_op = b.node("Mish", [b.conv(swish, 16, 16, 1)])
    # MobileNetV3's squeeze-and-excite gate: torch's Hardsigmoid (alpha 1/6) in the kernel; the
    # ONNX default's (alpha 0.2) after it.
    pooled = b.node("GlobalAveragePool", [mish_op])
    gate = b.node("HardSigmoid", [b.conv(b.node("Relu", [b.conv(pooled, 16, 8, 1)]), 8, 16, 1)], alpha=1.0 / 6,
                  beta=0.5)
    other = b.node("HardSigmoid", [b.conv(pooled, 16, 16, 1)])
    mish_op = b.node("Mul", [b.node("Mul", [mish_op, gate]), other])
    flat = b.node("Flatten", [mish_op], axis=1)
    fc = b.node("PRelu", [b.node("Gemm", [flat, b.const(RNG.standard_normal((16 * 7 * 9, 10)) * 0.05),
                                          b.const(RNG.uniform(-0.1, 0.1, 10))]),
                          b.const(RNG.uniform(0.0, 0.5, 10))])
    path = b.save(str(tmp_path / "acts.onnx"), [("x", [1, 8, 7, 9])], [along_w, mish, fc], opset=18)
    m = compare(path)
    steps = m.describe()["steps"]
    kernels = sorted(s["workload"]["epilogue"] for s in steps if s["kind"] == "kernel")
    for fused in (["bias", "leaky_relu"], ["bias", "tanh"], ["bias", "add", "hardswish"], ["bias", "mish"],
                  ["bias", "hardsigmoid"]):
        assert fused in kernels, kernels
    assert kernels.count(["bias", "leaky_relu"]) == 4, kernels  # LeakyRelu, two PRelus, the Gemm's
    ops = ("LeakyRelu", "PRelu", "Tanh", "HardSwish", "Mish", "HardSigmoid")
    assert [s["op"] for s in steps if s.get("op") in ops] == [
        "PRelu", "Tanh", "HardSigmoid"], steps  # the slopes along W, the unfolded Mish's Tanh, alpha 0.2
    # The importer's tasks name the gate's op, so a host job tunes the kernel that runs.
    fused = atvoss.graph.FusionScheduler.builtin(atvoss.Graph.from_onnx(path)).graph
    tasks = [n.kernel.to_json()["epilogue"] for n in fused.nodes.values() if n.kernel]
    assert tasks.count(["bias", "hardsigmoid"]) == 1 and tasks.count(["bias", "sigmoid"]) == 1, tasks


def test_layer_norms_as_exporters_write_them_below_opset_17(tmp_path):
    # torch.onnx's LayerNorm below opset 17 (BERT, GPT-2): ReduceMean, Sub, Pow 2, ReduceMean,
    # Add epsilon, Sqrt, Div, Mul gamma, Add beta; one with the square as a Mul and neither
    # gamma nor beta; one with gamma only, its ReduceMeans' axes an input (opset 18). Not one:
    # a mean over the middle axis, and one whose difference is also an output.
    def norm(b, x, axes_input=False, square="Pow", gamma=True, beta=True, axis=-1):
        if axes_input:
            mean = lambda t: b.node("ReduceMean", [t, b.ints([axis])])
        else:
            mean = lambda t: b.node("ReduceMean", [t], axes=[axis])
        d = b.node("Sub", [x, mean(x)])
        sq = b.node("Pow", [d, b.const(2.0)]) if square == "Pow" else b.node("Mul", [d, d])
        y = b.node("Div", [d, b.node("Sqrt", [b.node("Add", [mean(sq), b.const(1e-5)])])])
        if gamma:
            y = b.node("Mul", [y, b.const(RNG.uniform(0.5, 1.5, 24))])
        if beta:
            y = b.node("Add", [b.const(RNG.uniform(-0.1, 0.1, 24)), y])  # beta first, as some exporters write it
        return y, d

    for opset in (13, 18):
        b = Builder()
        x = b.node("Add", [b.node("MatMul", ["x", b.const(RNG.standard_normal((24, 24)) * 0.3)]), "x"])
        a, _ = norm(b, x, axes_input=opset == 18)
        c, _ = norm(b, a, axes_input=opset == 18, square="Mul", gamma=False, beta=False)
        e, _ = norm(b, c, axes_input=opset == 18, beta=False)
        middle, _ = norm(b, b.node("Reshape", [e, b.ints([2, 24, 6])]), axes_input=opset == 18, gamma=False,
                         beta=False, axis=1)
        f, diff = norm(b, e, axes_input=opset == 18)
        path = b.save(str(tmp_path / ("ln%d.onnx" % opset)), [("x", [2, 6, 24])], [middle, f, diff], opset=opset)
        m = compare(path)
        assert sum(s.get("as") == "layer norm" for s in m.describe()["steps"]) == 3


def test_rms_norms_as_t5_and_llama_exports_write_them(tmp_path):
    # T5's and LLaMA's RMSNorm below opset 23: Pow 2 (or x times itself), ReduceMean over the last
    # axis, Add epsilon, Sqrt, Reciprocal and a Mul by x (or x divided by the root), then the
    # weight times it (or none). Not one: a mean over the middle axis; and a LayerNorm's tail,
    # which is its own pattern.
    b = Builder()

    def rms(x, square="Pow", divide=False, weight=True, axis=-1):
        sq = b.node("Pow", [x, b.const(2.0)]) if square == "Pow" else b.node("Mul", [x, x])
        root = b.node("Sqrt", [b.node("Add", [b.node("ReduceMean", [sq], axes=[axis]), b.const(1e-6)])])
        y = b.node("Div", [x, root]) if divide else b.node("Mul", [b.node("Reciprocal", [root]), x])
        return b.node("Mul", [b.const(RNG.uniform(0.5, 1.5, 32)), y]) if weight else y

    x = b.node("MatMul", ["x", b.const(RNG.standard_normal((32, 32)) * 0.3)])
    a = rms(x)
    c = rms(b.node("Add", [a, x]), square="Mul", divide=True, weight=False)
    d = rms(c, divide=True)
    middle = rms(b.node("Reshape", [d, b.ints([2, 32, 5])]), weight=False, axis=1)
    mean = b.node("ReduceMean", [d], axes=[-1])
    diff = b.node("Sub", [d, mean])
    ln = b.node("Div", [diff, b.node("Sqrt", [b.node("Add", [b.node("ReduceMean", [b.node("Pow", [diff, b.const(2.0)])],
                                                                         axes=[-1]), b.const(1e-5)])])])
    m = compare(b.save(str(tmp_path / "rms.onnx"), [("x", [2, 5, 32])], [middle, ln], opset=13))
    made = [s.get("as") for s in m.describe()["steps"]]
    assert made.count("rms norm") == 3 and made.count("layer norm") == 1, made


def test_gelus_written_out_run_in_their_matmuls_and_convs_epilogues(tmp_path):
    # BERT's FFN (MatMul, bias Add, the erf GELU with a Div by sqrt 2), GPT-2's gelu_new with Pow,
    # torch's approximate="tanh" with x * x * x after a conv, (x * 0.5) * (1 + erf(x * 1/sqrt 2))
    # after a bias-free MatMul, and opset 20's Gelu op both ways: each in its kernel's epilogue.
    # A GELU whose input another node reads too runs as its own step, after the kernel.
    b = Builder()
    half, one = b.const(0.5), b.const(1.0)
    erf_gelu = b.erf_gelu

    def erf_gelu_scaled_first(x):
        erf = b.node("Erf", [b.node("Mul", [x, b.const(0.5 ** 0.5)])])
        return b.node("Mul", [b.node("Mul", [x, half]), b.node("Add", [one, erf])])

    def tanh_gelu(x, cube):
        x3 = b.node("Pow", [x, b.const(3.0)]) if cube == "Pow" else b.node("Mul", [b.node("Mul", [x, x]), x])
        inner = b.node("Mul", [b.node("Add", [x, b.node("Mul", [x3, b.const(0.044715)])]),
                               b.const((2 / np.pi) ** 0.5)])
        return b.node("Mul", [b.node("Mul", [x, half]), b.node("Add", [b.node("Tanh", [inner]), one])])

    def dense(x, n_in, n_out, bias=True):
        y = b.node("MatMul", [x, b.const(RNG.standard_normal((n_in, n_out)) * 0.3)])
        return b.node("Add", [y, b.const(RNG.uniform(-0.1, 0.1, n_out))]) if bias else y

    ffn = dense(erf_gelu(dense("x", 16, 32)), 32, 16)
    gpt = dense(tanh_gelu(dense(ffn, 16, 32), "Pow"), 32, 16)
    scaled = erf_gelu_scaled_first(dense(gpt, 16, 24, bias=False))
    ops = b.node("Gelu", [dense(scaled, 24, 16)], approximate="tanh")
    ops = b.node("Gelu", [dense(ops, 16, 16)])
    shared = dense(ops, 16, 16)
    also = b.node("Add", [erf_gelu(shared), shared])  # x read outside the GELU
    conv = tanh_gelu(b.conv("img", 4, 8, 3, pads=[1, 1, 1, 1]), "Mul")
    path = b.save(str(tmp_path / "gelus.onnx"), [("x", [2, 5, 16]), ("img", [1, 4, 6, 6])], [also, conv], opset=20)
    m = compare(path)
    steps = m.describe()["steps"]
    kernels = [s["workload"]["epilogue"] for s in steps if s["kind"] == "kernel"]
    assert kernels.count(["bias", "gelu_erf"]) == 2 and kernels.count(["bias", "gelu"]) == 3, kernels
    assert ["gelu_erf"] in kernels, kernels
    assert [s.get("as") for s in steps if s.get("as", "").endswith("gelu")] == ["erf gelu"], steps


def test_activations_after_convs_run_as_im2col_matmuls_are_in_their_epilogue(tmp_path):
    # Whisper's front end (1-D convs, each then an erf GELU) and a conv of uneven pads (tf2onnx's
    # SAME of stride 2) then a ReLU6 as Clip: the im2col matmul computes each; a residual Add
    # after one is not taken (its rows are channels-last) and runs after it.
    b = Builder()
    gelu = b.erf_gelu

    def conv1d(x, cin, cout, **attrs):
        w = b.const(RNG.standard_normal((cout, cin, 3)) * np.sqrt(2.0 / (cin * 3)))
        return b.node("Conv", [x, w, b.const(RNG.uniform(-0.1, 0.1, cout))], kernel_shape=[3], **attrs)

    a = gelu(conv1d("audio", 8, 16, pads=[1, 1]))
    a = gelu(conv1d(a, 16, 16, pads=[1, 1], strides=[2]))
    a = b.node("Add", [conv1d(a, 16, 16, pads=[1, 1]), a])
    img = b.node("Clip", [b.conv("img", 4, 8, 3, pads=[0, 0, 1, 1], strides=[2, 2]), b.const(0.0), b.const(6.0)])
    elu = b.node("Elu", [b.conv("img", 4, 8, 3, pads=[1, 0, 0, 1])], alpha=0.5)  # fused for cost; runs after
    elu1d = b.node("Elu", [conv1d(a, 16, 8, pads=[2, 0])], alpha=0.5)
    path = b.save(str(tmp_path / "im2col.onnx"), [("audio", [1, 8, 20]), ("img", [1, 4, 9, 9])], [a, img, elu, elu1d])
    m = compare(path)
    steps = m.describe()["steps"]
    kernels = sorted(s["workload"]["epilogue"] for s in steps if s["kind"] == "kernel")
    assert kernels == [["bias"]] * 3 + [["bias", "gelu_erf"]] * 2 + [["bias", "relu6"]], kernels
    assert [s["op"] for s in steps if s.get("op") in ("Elu", "Add", "Clip", "Erf")] == ["Add", "Elu", "Elu"], steps


def test_integer_inputs_masks_and_comparisons(tmp_path):
    # A BERT export's front: int64 token ids into an embedding Gather, an int64 mask cast and
    # turned into an additive bias; Equal/Where/Expand/Not as newer exporters write them.
    b = Builder()
    words = b.node("Gather", [b.const(RNG.standard_normal((50, 16))), "ids"], axis=0)
    mask = b.node("Cast", ["mask"], to=T.FLOAT)
    bias = b.node("Mul", [b.node("Sub", [b.const(1.0), mask]), b.const(-10000.0)])
    x = b.node("Add", [words, b.node("Unsqueeze", [bias, b.ints([2])])])
    masked = b.node("Where", [b.node("Unsqueeze", [b.node("Equal", ["mask", b.ints(0)]), b.ints([2])]),
                              b.const(0.0), x])
    keep = b.node("Cast", [b.node("Not", [b.node("Less", [masked, b.const(0.0)])])], to=T.FLOAT)
    wide = b.node("Expand", [keep, b.node("Concat", [b.ints([3]), b.node("Shape", [keep])], axis=0)])
    half = b.node("Cast", [b.node("Div", [b.node("Cast", [x], to=T.INT64), b.ints(2)])], to=T.FLOAT)
    ints = [helper.make_tensor_value_info(n, T.INT64, ["N", 6]) for n in ("ids", "mask")]
    graph = helper.make_graph(b.nodes, "bert_front", ints, [helper.make_tensor_value_info(o, T.FLOAT, None)
                                                            for o in (masked, wide, half)], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = str(tmp_path / "front.onnx")
    onnx.save(model, path)
    m = rt.Model(path, batch=2)
    assert [d for _, d in m.input_dtypes] == ["int64", "int64"]
    ids = RNG.integers(-50, 50, (2, 6)).astype(np.int64)
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=np.int64)
    ours = m.run([ids, mask])
    theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"ids": ids, "mask": mask})
    for a, r in zip(ours, theirs):
        assert a.shape == r.shape
        assert float(np.max(np.abs(a - r) / np.maximum(np.abs(r), 1))) <= 1e-4
    with pytest.raises(ValueError, match="Gather"):
        m.run([np.full((2, 6), 50, dtype=np.int64), mask])
    with pytest.raises(ValueError, match="'ids'.*integers"):
        m.run([np.full((2, 6), 0.5, dtype=np.float32), mask])


def run_both(path, feeds):
    """The engine's outputs and ONNX Runtime's on the same named inputs, compared as compare() does."""
    m = rt.Model(path)
    ours = m.run([feeds[n] for n, _ in m.inputs])
    theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run([n for n, _ in m.outputs], feeds)
    for (name, _), a, r in zip(m.outputs, ours, theirs):
        assert a.shape == r.shape and a.dtype == r.dtype, name
        error = float(np.max(np.abs(a - r) / np.maximum(np.abs(r), 1)))
        assert error <= 1e-4, "%s: max relative error %.3g" % (name, error)


def save_typed(b, path, inputs, outputs, opset=13):
    """b's graph with inputs of the given (name, element type, shape)."""
    graph = helper.make_graph(b.nodes, "typed", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(o, T.FLOAT, None) for o in outputs], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_every_reduction_at_opset_13_and_18(tmp_path):
    # F.normalize exports ReduceL2; logsumexp ReduceLogSumExp (on large values: summed shifted by
    # the max); opset 18 moves axes to an input and adds noop_with_empty_axes.
    for opset in (13, 18):
        b = Builder()
        outs = []
        for k, op in enumerate(["ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp",
                                "ReduceMean", "ReduceProd"]):
            x = b.node("Mul", [b.node("Abs", ["x"]), b.const(1000.0)]) if op == "ReduceLogSumExp" else "x"
            if op == "ReduceLogSum":
                x = b.node("Add", [b.node("Abs", ["x"]), b.const(0.5)])
            axes = [[1], [0, 2], [-1]][k % 3]
            keep = k % 2
            if opset >= 18:
                outs.append(b.node(op, [x, b.ints(axes)], keepdims=keep))
            else:
                outs.append(b.node(op, [x], axes=axes, keepdims=keep))
        if opset >= 18:  # empty axes and noop_with_empty_axes: none reduced
            outs.append(b.node("ReduceL1", ["x", b.ints(np.zeros(0, np.int64))], noop_with_empty_axes=1))
        else:  # no axes: every axis
            outs.append(b.node("ReduceL2", ["x"], keepdims=1))
        compare(b.save(str(tmp_path / ("reduce%d.onnx" % opset)), [("x", [3, 4, 5])], outs, opset=opset))


def test_sum_mean_max_min_of_any_number_of_inputs(tmp_path):
    b = Builder()
    y = b.node("Relu", ["y"])
    outs = [b.node("Sum", ["x", "y", b.const(RNG.uniform(-1, 1, (1, 5)))]),  # broadcast
            b.node("Mean", ["x", "y"]), b.node("Mean", ["x", y, "y"]), b.node("Max", ["x"]),
            b.node("Max", ["x", "y", y, b.const(0.25)]), b.node("Min", ["x", y, "y"])]
    compare(b.save(str(tmp_path / "variadic.onnx"), [("x", [4, 5]), ("y", [4, 5])], outs))


def test_cumsum_as_roberta_exports_its_position_ids(tmp_path):
    # RoBERTa's position ids: the running count of non-padding tokens, times the mask, plus
    # the padding index (int64 throughout); then CumSum's exclusive and reverse forms on floats.
    b = Builder()
    mask = b.node("Cast", [b.node("Not", [b.node("Equal", ["ids", b.ints(1)])])], to=T.INT64)
    running = b.node("CumSum", [mask, b.ints(1)])
    positions = b.node("Add", [b.node("Mul", [running, mask]), b.ints(1)])
    table = b.node("Gather", [b.const(RNG.standard_normal((16, 8))), positions], axis=0)
    x = b.node("Cast", ["ids"], to=T.FLOAT)
    forms = [b.node("CumSum", [x, b.ints(0)], exclusive=1), b.node("CumSum", [x, b.ints(-1)], reverse=1),
             b.node("CumSum", [x, b.ints(1)], exclusive=1, reverse=1)]
    path = save_typed(b, str(tmp_path / "positions.onnx"), [("ids", T.INT64, [2, 7])], [table, *forms])
    ids = np.array([[0, 5, 9, 4, 2, 1, 1], [0, 3, 3, 8, 6, 7, 2]], dtype=np.int64)  # 1 pads
    run_both(path, {"ids": ids})


def test_mod_castlike_and_integer_inputs_of_every_width(tmp_path):
    # An image fed as uint8 (exporters that keep the preprocessing), scaled to float by a CastLike;
    # Mod of both signs (fmod 0 takes the divisor's sign, fmod 1 the dividend's); an int8
    # input's Div truncates.
    b = Builder()
    image = b.node("Div", [b.node("CastLike", ["image", b.const(0.0)]), b.const(255.0)])
    whole = b.node("Cast", [b.node("CastLike", [b.node("Mul", [image, b.const(7.0)]), b.ints(0)])], to=T.FLOAT)
    mods = [b.node("Cast", [b.node("Mod", ["a", b.ints([3, -3, 5])])], to=T.FLOAT),
            b.node("Mod", [b.node("Cast", ["a"], to=T.FLOAT), b.const([2.5, -2.5, 4.0])], fmod=1)]
    b.inits.append(numpy_helper.from_array(np.array([3, -2, 4], dtype=np.int8), "divisor"))
    div = b.node("Cast", [b.node("Div", ["small", "divisor"])], to=T.FLOAT)
    path = save_typed(b, str(tmp_path / "typed.onnx"),
                      [("image", T.UINT8, [1, 3, 4, 4]), ("a", T.INT64, [2, 3]), ("small", T.INT8, [2, 3])],
                      [image, whole, *mods, div], opset=15)
    assert [d for _, d in rt.Model(path).input_dtypes] == ["uint8", "int64", "int8"]
    run_both(path, {"image": RNG.integers(0, 256, (1, 3, 4, 4)).astype(np.uint8),
                    "a": RNG.integers(-20, 20, (2, 3)).astype(np.int64),
                    "small": RNG.integers(-100, 100, (2, 3)).astype(np.int8)})
    # uint8 + uint8 wraps around in ONNX (200 + 100 is 44): refused, not computed in float.
    b2 = Builder()
    y = b2.node("Cast", [b2.node("Add", ["image", "image"])], to=T.FLOAT)
    wrap = save_typed(b2, str(tmp_path / "wrap.onnx"), [("image", T.UINT8, [4])], [y])
    with pytest.raises(ValueError, match="Add.*arithmetic on uint8 wraps around"):
        rt.Model(wrap)


def test_causal_masks_with_trilu_and_torch_gather(tmp_path):
    # GPT-style exports build the causal mask with Trilu (torch.triu / tril, opset 14); torch.gather
    # exports as GatherElements, its indices computed by the model.
    b = Builder()
    tri = [b.node("Trilu", ["x"]), b.node("Trilu", ["x", b.ints(1)], upper=1),
           b.node("Trilu", ["x", b.ints(-1)], upper=0), b.node("Trilu", [b.const(np.ones((6, 6)))], upper=0)]
    gathers = [b.node("GatherElements", ["x", "idx"], axis=2), b.node("GatherElements", ["x", "idx"], axis=-2)]
    path = save_typed(b, str(tmp_path / "tri.onnx"), [("x", T.FLOAT, [2, 5, 6]), ("idx", T.INT64, [2, 5, 6])],
                      tri + gathers, opset=14)
    idx = RNG.integers(-5, 5, (2, 5, 6)).astype(np.int64)  # negative ones count from the end
    run_both(path, {"x": RNG.uniform(-1, 1, (2, 5, 6)).astype(np.float32), "idx": idx})
    with pytest.raises(ValueError, match="GatherElements.*outside"):
        rt.Model(path).run([np.zeros((2, 5, 6), np.float32), np.full((2, 5, 6), 6, np.int64)])


def test_unary_ops_exporters_write(tmp_path):
    b = Builder()
    pos = b.node("Add", [b.node("Abs", ["x"]), b.const(1.0)])
    outs = [b.node(op, ["x"]) for op in ("Mish", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh",
                                         "Asinh", "Atanh", "Sign", "Selu", "ThresholdedRelu", "Celu")]
    outs += [b.node("Acosh", [pos]), b.node("Selu", ["x"], alpha=2.0, gamma=0.5),
             b.node("ThresholdedRelu", ["x"], alpha=0.25), b.node("Celu", ["x"], alpha=0.5),
             b.node("Mish", [b.node("Mul", ["x", b.const(40.0)])]),  # softplus past exp's range
             b.node("Round", [b.node("Mul", ["x", b.const(4.0)])]),
             b.node("Round", [b.const([0.5, 1.5, 2.5, -0.5, -2.5])])]  # halves to even
    inf = b.node("Reciprocal", [b.node("Relu", ["x"])])  # +inf where x <= 0
    minus = b.node("Neg", [inf])
    outs += [b.node("Cast", [b.node("IsInf", [minus])], to=T.FLOAT),
             b.node("Cast", [b.node("IsInf", [minus], detect_negative=0)], to=T.FLOAT),
             b.node("Cast", [b.node("IsInf", [inf], detect_positive=0)], to=T.FLOAT),
             b.node("Cast", [b.node("IsNaN", [b.node("Mul", [inf, b.const(0.0)])])], to=T.FLOAT)]
    # Mish (opset 18) and Gelu (opset 20) are newer than Debian's ONNX library: their shape is the input's.
    outs += [b.node("Gelu", [b.node("Mish", ["x"])]), b.node("Gelu", ["x"], approximate="tanh")]
    compare(b.save(str(tmp_path / "unary.onnx"), [("x", [3, 8])], outs, opset=20))


def test_scalar_inputs_and_outputs(tmp_path):
    # Rank-0 tensors: a scale fed as a scalar, and a sum over every axis (keepdims 0), a loss's form.
    b = Builder()
    total = b.node("ReduceSum", ["x"], keepdims=0)
    root = b.node("Sqrt", [b.node("Abs", [total])])
    outs = [b.node("Mul", ["x", "s"]), total, root, b.node("Add", ["x", root])]
    path = b.save(str(tmp_path / "scalar.onnx"), [("x", [3, 4]), ("s", [])], outs, opset=11)
    m = compare(path)
    assert dict(m.inputs)["s"] == () and dict(m.outputs)[total] == ()


def test_one_d_convs_and_pools_as_audio_and_text_models_write_them(tmp_path):
    # Whisper's and wav2vec2's front ends and text CNNs: Conv over [N, C, L] with every attribute
    # (constant weights: the matmul route; weights fed at run time: the direct loop), 1-D pools.
    b = Builder()

    def conv1d(x, cin, cout, k, group=1, bias=True, **attrs):
        w = b.const(RNG.standard_normal((cout, cin // group, k)) * np.sqrt(2.0 / (cin // group * k)))
        ins = [x, w] + ([b.const(RNG.uniform(-0.1, 0.1, cout))] if bias else [])
        return b.node("Conv", ins, group=group, kernel_shape=[k], **attrs)

    y = b.node("Relu", [conv1d("x", 8, 16, 3, pads=[1, 1])])
    y = conv1d(y, 16, 16, 5, strides=[2], pads=[2, 1], dilations=[1])
    y = conv1d(y, 16, 16, 3, group=4, dilations=[2], pads=[2, 2], bias=False)
    y = conv1d(y, 16, 16, 3, group=16, auto_pad="SAME_UPPER", strides=[2])
    y = conv1d(y, 16, 8, 4, auto_pad="SAME_LOWER")
    pools = [b.node("MaxPool", [y], kernel_shape=[3], strides=[2], pads=[1, 0], ceil_mode=1),
             b.node("AveragePool", [y], kernel_shape=[3], pads=[1, 1], count_include_pad=1),
             b.node("AveragePool", [y], kernel_shape=[2], strides=[2], pads=[0, 1]),
             b.node("MaxPool", [y], kernel_shape=[2], dilations=[2])]
    live = b.node("Conv", ["x", "w"], kernel_shape=[3], pads=[0, 2])  # weights fed at run time
    path = save_typed(b, str(tmp_path / "conv1d.onnx"), [("x", T.FLOAT, [2, 8, 37]), ("w", T.FLOAT, [4, 8, 3])],
                      [y, *pools, live])
    run_both(path, {"x": RNG.uniform(-1, 1, (2, 8, 37)).astype(np.float32),
                    "w": RNG.uniform(-1, 1, (4, 8, 3)).astype(np.float32)})
    # The five with constant weights on the matmul kernel (the direct loop ran Whisper's at 0.01x),
    # and the importer's tasks, fused, are those of one group's (in the NPU's default dtype here; a
    # host job reads float32): a host job tunes the kernels that run, the first with its Relu.
    steps = rt.Model(path).describe()["steps"]
    ran = [s["workload"] for s in steps if s["kind"] == "kernel"]
    assert len(ran) == 5 and ran[0]["epilogue"] == ["bias", "relu"]
    fused = atvoss.graph.FusionScheduler.builtin(atvoss.Graph.from_onnx(path)).graph
    tasks = [n.kernel.to_json() for n in fused.nodes.values() if n.op == "Conv" and n.kernel]
    assert len(tasks) == 3 and all(dict(t, dtype="float32") in ran for t in tasks), (tasks, ran)


def test_group_and_rms_normalization_gather_nd_and_pad_axes(tmp_path):
    # Diffusion U-Nets' GroupNorm (opset 18 scales each group, opset 21 each channel), an LLM's
    # RMSNorm (opset 23), GatherND (a pooler's token pick, with batch_dims), opset 18's Pad axes.
    for opset, per_channel in ((18, False), (21, True)):
        b = Builder()
        n = 12 if per_channel else 4
        y = b.node("GroupNormalization", ["x", b.const(RNG.uniform(0.5, 1.5, n)), b.const(RNG.uniform(-1, 1, n))],
                   num_groups=4, epsilon=1e-3)
        compare(b.save(str(tmp_path / ("group%d.onnx" % opset)), [("x", [2, 12, 5, 3])], [y], opset=opset))
    # Pad's axes: the output's shape declared, as exporters declare a graph's outputs (Debian's ONNX
    # library predates opset 18's Pad and cannot infer it).
    b = Builder()
    pad = b.node("Pad", ["x", b.ints([1, 2, 0, 3]), b.const(0.5), b.ints([-1, 1])])
    graph = helper.make_graph(b.nodes, "pad", [helper.make_tensor_value_info("x", T.FLOAT, [2, 12, 5, 3])],
                              [helper.make_tensor_value_info(pad, T.FLOAT, [2, 17, 5, 4])], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "pad_axes.onnx"))
    compare(str(tmp_path / "pad_axes.onnx"))
    b = Builder()
    rms = [b.node("RMSNormalization", ["x", b.const(RNG.uniform(0.5, 1.5, (6,)))], epsilon=1e-4),
           b.node("RMSNormalization", ["x", b.const(RNG.uniform(0.5, 1.5, (4, 6)))], axis=1)]
    compare(b.save(str(tmp_path / "rms.onnx"), [("x", [3, 4, 6])], rms, opset=23))
    b = Builder()
    picks = [b.node("GatherND", ["x", "idx"], batch_dims=1), b.node("GatherND", ["x", "pairs"])]
    path = save_typed(b, str(tmp_path / "gathernd.onnx"),
                      [("x", T.FLOAT, [2, 5, 4]), ("idx", T.INT64, [2, 3, 1]), ("pairs", T.INT64, [3, 2])], picks)
    run_both(path, {"x": RNG.uniform(-1, 1, (2, 5, 4)).astype(np.float32),
                    "idx": RNG.integers(-5, 5, (2, 3, 1)).astype(np.int64),
                    "pairs": np.array([[0, 4], [1, -1], [1, 2]], np.int64)})


def test_scatters_as_in_place_assignments_export(tmp_path):
    # YOLOv5's Detect head exported with inplace=True writes y[..., 0:2] = ... as ScatterND with
    # constant indices; index_put_ / scatter_ / scatter_add_ export as ScatterND and ScatterElements.
    b = Builder()
    # [3, 4, 2, 2, 4]: element (i, j, k, c) for c in 0, 1
    xy = np.stack(np.meshgrid(np.arange(3), np.arange(4), np.arange(2), np.arange(2), indexing="ij"), -1)
    b.inits.append(numpy_helper.from_array(xy.astype(np.int64), "where_xy"))
    boxes = b.node("ScatterND", ["x", "where_xy", b.node("Mul", [b.node("Slice", ["x", b.ints([0]), b.ints([2]),
                                                                                      b.ints([3])]),
                                                                      b.const(2.0)])])
    outs = [boxes, b.node("ScatterND", ["x", "rows", "upd"], reduction="add"),
            b.node("ScatterElements", ["x", "cols", "upd2"], axis=-1),
            b.node("ScatterElements", ["x", "cols", "upd2"], axis=3, reduction="max")]
    path = save_typed(b, str(tmp_path / "scatter.onnx"),
                      [("x", T.FLOAT, [3, 4, 2, 5]), ("rows", T.INT64, [2, 1]), ("upd", T.FLOAT, [2, 4, 2, 5]),
                       ("cols", T.INT64, [3, 4, 2, 2]), ("upd2", T.FLOAT, [3, 4, 2, 2])], outs, opset=16)
    cols = np.stack([RNG.permutation(5)[:2] for _ in range(24)]).reshape(3, 4, 2, 2) - 2  # some negative
    feeds = {"x": RNG.uniform(-1, 1, (3, 4, 2, 5)).astype(np.float32), "rows": np.array([[2], [-3]], np.int64),
             "upd": RNG.uniform(-1, 1, (2, 4, 2, 5)).astype(np.float32), "cols": cols.astype(np.int64),
             "upd2": RNG.uniform(-1, 1, (3, 4, 2, 2)).astype(np.float32)}
    run_both(path, feeds)
    with pytest.raises(ValueError, match="ScatterND.*outside"):
        rt.Model(path).run([feeds["x"], np.array([[3], [0]], np.int64), feeds["upd"], feeds["cols"], feeds["upd2"]])
    # Shapes that would read or write past data or updates are refused at load, naming the node.
    for name, (op, ins, shapes, attrs, why) in {
            "wide": ("ScatterElements", ["x", "i", "u"], [[2, 3], [4, 1], [4, 1]], {"axis": 1},
                     "indices larger than data along dim 0"),
            "nd": ("ScatterND", ["x", "i", "u"], [[2, 3], [2, 1], [2, 2]], {}, "updates of another shape"),
            "gather": ("GatherElements", ["x", "i"], [[2, 3], [2, 5]], {"axis": 0},
                       "indices larger than data along dim 1")}.items():
        bad = Builder()
        bad.node(op, ins, **attrs)
        types = [T.FLOAT if n != "i" else T.INT64 for n in ins]
        graph = helper.make_graph(bad.nodes, name, [helper.make_tensor_value_info(n, t, sh)
                                                    for n, t, sh in zip(ins, types, shapes)],
                                  [helper.make_tensor_value_info(bad.nodes[-1].output[0], T.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
        model.ir_version = 8
        onnx.save(model, str(tmp_path / (name + ".onnx")))
        with pytest.raises(ValueError, match=op + ".*" + why):
            rt.Model(str(tmp_path / (name + ".onnx")))


def test_recurrent_layers_as_torch_exports_them(tmp_path):
    """nn.LSTM(batch_first=True, bidirectional=True) as torch.onnx writes it (Transpose to
    seq-first, LSTM with B and initial states fed as inputs, Y's directions joined by Transpose
    and Reshape), stacked on GRUs (linear_before_reset 0 and 1, forward and reverse) and an
    RNN; and every other attribute: per-sequence lengths, clip, peepholes, input_forget, the
    activations ONNX names with alpha and beta given and left to their defaults, and Y_h, Y_c
    as outputs."""
    b = Builder()
    hid, feat = 8, 6

    def weights(op, dirs, n_in, bias=True, peep=False):
        g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
        ins = [b.const(RNG.uniform(-0.5, 0.5, (dirs, g * hid, n_in))),
               b.const(RNG.uniform(-0.5, 0.5, (dirs, g * hid, hid)))]
        ins.append(b.const(RNG.uniform(-0.3, 0.3, (dirs, 2 * g * hid))) if bias or peep else "")
        return ins + (["", "", "", b.const(RNG.uniform(-0.3, 0.3, (dirs, 3 * hid)))] if peep else [])

    def layer(op, ins, outputs=1, **attrs):
        b.count += 1
        outs = ["%s_%d_%d" % (op.lower(), b.count, k) for k in range(outputs)]
        b.nodes.append(helper.make_node(op, ins, outs, name="n%d_%s" % (b.count, op), hidden_size=hid, **attrs))
        return outs

    seq_first = b.node("Transpose", ["x"], perm=[1, 0, 2])  # [7, N, 6]
    y, yh, yc = layer("LSTM", [seq_first] + weights("LSTM", 2, feat) + ["", "h0", "c0"], 3, direction="bidirectional")
    joined = b.node("Reshape", [b.node("Transpose", [y], perm=[0, 2, 1, 3]), b.ints([7, -1, 2 * hid])])
    g1 = layer("GRU", [joined] + weights("GRU", 1, 2 * hid), linear_before_reset=1)[0]
    g2 = layer("GRU", [b.node("Squeeze", [g1, b.ints([1])])] + weights("GRU", 1, hid, bias=False),
               direction="reverse")[0]
    r = layer("RNN", [b.node("Squeeze", [g2, b.ints([1])])] + weights("RNN", 1, hid), activations=["Relu"], clip=0.7)[0]
    outs = [b.node("Transpose", [b.node("Squeeze", [r, b.ints([1])])], perm=[1, 0, 2]), yh, yc]
    b.inits.append(numpy_helper.from_array(np.array([7, 4], np.int32), "lens"))
    outs += layer("LSTM", [seq_first] + weights("LSTM", 1, feat, peep=True)[:3] + ["lens", "", ""] +
                  weights("LSTM", 1, feat, peep=True)[-1:], 3, input_forget=1, clip=1.5,
                  activations=["HardSigmoid", "LeakyRelu", "Softsign"], activation_alpha=[0.3, 0.2],
                  activation_beta=[0.4])
    outs += layer("GRU", [seq_first] + weights("GRU", 2, feat) + ["lens"], 2, direction="bidirectional",
                  activations=["Sigmoid", "Tanh", "HardSigmoid", "Elu"])
    # activation_alpha read as ONNX Runtime does: in order for the activations that take one
    # (LSTM's LeakyRelu 0.2 here, GRU's), by position for RNN's (its ThresholdedRelu's 0.1).
    c0_once = b.node("Slice", ["c0", b.ints([0]), b.ints([1]), b.ints([0])])  # a cell state past the clip, not its
    outs += layer("LSTM", [seq_first] + weights("LSTM", 1, feat)[:3] + ["", "", c0_once],
                  activations=["Sigmoid", "LeakyRelu", "Tanh"], activation_alpha=[0.2], clip=0.5)
    outs += layer("RNN", [seq_first] + weights("RNN", 2, feat) + ["lens"], 2, direction="bidirectional",
                  activations=["Tanh", "ThresholdedRelu"], activation_alpha=[0.5, 0.1])
    graph = helper.make_graph(b.nodes, "rnn", [helper.make_tensor_value_info("x", T.FLOAT, ["N", 7, feat]),
                                               helper.make_tensor_value_info("h0", T.FLOAT, [2, "N", hid]),
                                               helper.make_tensor_value_info("c0", T.FLOAT, [2, "N", hid])],
                              [helper.make_tensor_value_info(o, T.FLOAT, None) for o in outs], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    path = str(tmp_path / "rnn.onnx")
    onnx.save(model, path)
    compare(path, batch=2)
    b = Builder()  # lengths fed at run time, checked in every run
    b.nodes = [helper.make_node("GRU", ["x", b.const(RNG.uniform(-0.5, 0.5, (1, 3 * hid, feat))),
                                        b.const(RNG.uniform(-0.5, 0.5, (1, 3 * hid, hid))), "", "n"], ["y"],
                                hidden_size=hid)]
    path = save_typed(b, str(tmp_path / "lens.onnx"), [("x", T.FLOAT, [7, 2, feat]), ("n", T.INT32, [2])], ["y"])
    run_both(path, {"x": RNG.uniform(-1, 1, (7, 2, feat)).astype(np.float32), "n": np.array([3, 7], np.int32)})
    with pytest.raises(ValueError, match=r"GRU\): sequence_lens\[1\] is outside \[0, 7\]"):
        rt.Model(path).run([np.zeros((7, 2, feat), np.float32), np.array([3, 8], np.int32)])
    with pytest.raises(ValueError, match="LSTM.*'activations'.*'Affine'"):
        model.graph.node[1].attribute.append(helper.make_attribute("activations", ["Sigmoid", "Affine", "Tanh"] * 2))
        onnx.save(model, path)
        rt.Model(path, batch=2)


def test_weights_stored_as_external_data(tmp_path):
    """A model saved as torch.onnx.export and onnx.save write models past 2 GB: initializers in
    a file beside the model, each at an offset ("location", "offset", "length"), here every one
    of them in one file, and the same weights one file each in a subfolder; runs as ONNX Runtime
    runs it. A location outside the model's folder, a truncated data file and a length unlike
    the tensor's are refused naming the constant."""
    b = Builder()
    x = b.conv("x", 3, 8, 3, pads=[1, 1, 1, 1])
    y = b.node("Gemm", [b.node("Flatten", [b.node("GlobalAveragePool", [b.node("Relu", [x])])]),
                        b.const(RNG.standard_normal((5, 8))), b.const(RNG.standard_normal(5))], transB=1)
    path = b.save(str(tmp_path / "plain.onnx"), [("x", [1, 3, 6, 6])], [y])
    model = onnx.load(path)
    onnx.save(model, str(tmp_path / "one.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="one.onnx.data", size_threshold=0)
    (tmp_path / "sub").mkdir()
    onnx.save(onnx.load(path), str(tmp_path / "sub" / "each.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=False, size_threshold=0)
    assert (tmp_path / "one.onnx").stat().st_size < 1000 < (tmp_path / "one.onnx.data").stat().st_size
    compare(str(tmp_path / "one.onnx"))
    compare(str(tmp_path / "sub" / "each.onnx"))

    def external(entries):
        m = onnx.load(str(tmp_path / "one.onnx"), load_external_data=False)
        for e in m.graph.initializer[0].external_data:
            if e.key in entries:
                e.value = entries[e.key]
        onnx.save(m, str(tmp_path / "edited.onnx"))
        return str(tmp_path / "edited.onnx")

    with pytest.raises(ValueError, match="constant 'c1'.*'location'.*'../one.onnx.data'"):
        rt.Model(external({"location": "../one.onnx.data"}))
    with pytest.raises(ValueError, match="constant 'c1'.*'length' is 4 bytes, its shape 864"):
        rt.Model(external({"length": "4"}))
    with pytest.raises(ValueError, match="constant 'c1'.*'offset'.*runs past the end"):
        rt.Model(external({"offset": str((tmp_path / "one.onnx.data").stat().st_size)}))
    with pytest.raises(ValueError, match="constant 'c1'.*'offset': expected a whole number"):
        rt.Model(external({"offset": "-8"}))


def test_grid_sample_every_mode_padding_and_corner_rule(tmp_path):
    """GridSample (opset 16, torch's F.grid_sample: spatial transformers, optical flow, deformable
    attention) in each of its modes (bilinear, nearest, bicubic), padding modes (zeros, border,
    reflection) and align_corners, on a grid reaching past [-1, 1] and landing on pixel centres
    and halves, fed at run time and as a constant."""
    b = Builder()
    rng = np.random.default_rng(3)
    fixed = b.const(np.concatenate([rng.uniform(-1.7, 1.7, (2, 4, 5, 2)),
                                    np.stack(np.meshgrid(np.linspace(-1.5, 1.5, 7), np.linspace(-1.25, 0.75, 5)),
                                             -1)[None, :4].repeat(2, 0)], axis=2))
    outs = []
    for grid in ("grid", fixed):
        for mode in ("bilinear", "nearest", "bicubic"):
            for padding in ("zeros", "border", "reflection"):
                for corners in (0, 1):
                    outs.append(b.node("GridSample", ["x", grid], mode=mode, padding_mode=padding,
                                       align_corners=corners))
    compare(b.save(str(tmp_path / "grid.onnx"), [("x", [2, 3, 5, 7]), ("grid", [2, 4, 12, 2])], outs, opset=16))


def test_lp_normalization_hardmax_mvn_eye_like_and_list_constants(tmp_path):
    """LpNormalization (p 1 and 2, an all-zero row), Hardmax (ties to the first; opset 13's axis
    and opset 11's flattening from axis), MeanVarianceNormalization (default and given axes),
    EyeLike (k above, below, non-square), and Constant nodes of value_floats and value_ints."""
    def model(opset, nodes_of):
        b = Builder()
        zeroed = b.node("Mul", ["x", b.const(np.array([0, 1, 1], np.float32).reshape(1, 1, 3))])  # zero norms
        tied = b.node("Floor", [b.node("Mul", ["x", b.const(2.0)])])  # ties for Hardmax
        outs = nodes_of(b, zeroed, tied)
        if opset >= 12:  # Constant's value_floats and value_ints
            b.nodes.append(helper.make_node("Constant", [], ["floats"], value_floats=[0.5, -1.5, 2.0]))
            b.nodes.append(helper.make_node("Constant", [], ["ints"], value_ints=[3, 1, 4]))
            outs += [b.node("Mul", ["x", "floats"]), b.node("Add", ["x", b.node("Cast", ["ints"], to=T.FLOAT)])]
        return compare(b.save(str(tmp_path / ("norms%d.onnx" % opset)), [("x", [2, 4, 3])], outs, opset=opset))

    model(13, lambda b, zeroed, tied: [
        b.node("LpNormalization", [zeroed], axis=1, p=1), b.node("LpNormalization", [zeroed], axis=1),
        b.node("LpNormalization", ["x"]), b.node("Hardmax", [tied]), b.node("Hardmax", [tied], axis=1),
        b.node("MeanVarianceNormalization", [b.node("Unsqueeze", ["x", b.ints([3])])]),
        b.node("MeanVarianceNormalization", ["x"], axes=[1, 2]),
        b.node("EyeLike", [b.node("Squeeze", [b.node("Slice", ["x", b.ints([0]), b.ints([1]), b.ints([0])]),
                                             b.ints([0])])], k=1),
        b.node("EyeLike", [b.node("Squeeze", [b.node("Slice", ["x", b.ints([0]), b.ints([1]), b.ints([0])]),
                                             b.ints([0])])], k=-2)])
    model(11, lambda b, zeroed, tied: [b.node("Hardmax", [tied], axis=1), b.node("Hardmax", [tied], axis=0)])


def test_top_k_and_one_hot(tmp_path):
    # A detection head's candidate pick (TopK, values and indices) and a label's one-hot.
    b = Builder()
    tops = [b.node("TopK", ["x", b.ints([3])], axis=1), b.node("TopK", ["x", b.ints([2])], largest=0)]
    b.nodes[-2].output.append("top_idx")
    b.nodes[-1].output.append("low_idx")
    ties = b.node("TopK", [b.node("Floor", [b.node("Mul", ["x", b.const(2.0)])]), b.ints([4])], axis=-1)
    b.nodes[-1].output.append("tie_idx")
    hot = [b.node("OneHot", ["labels", b.ints(5), b.const([0.25, 2.0])]),
           b.node("OneHot", ["labels", b.const(6.0), b.const([0.0, 1.0])], axis=1)]
    idx = [b.node("Cast", [t], to=T.FLOAT) for t in ("top_idx", "low_idx", "tie_idx")]
    path = save_typed(b, str(tmp_path / "topk.onnx"), [("x", T.FLOAT, [2, 6, 5]), ("labels", T.INT64, [2, 3])],
                      tops + [ties] + hot + idx, opset=11)
    run_both(path, {"x": RNG.uniform(-1, 1, (2, 6, 5)).astype(np.float32),
                    "labels": np.array([[0, 4, -1], [2, 7, -5]], np.int64)})  # 7: a line of off values


def test_einsum_as_torch_exports_it(tmp_path):
    # torch.einsum exports as Einsum (opset 12): attention scores, batched products, a projection
    # with a batch on one side only, "..." batches, transposes, sums, an implicit output.
    b = Builder()
    eqs = [("bhid,bhjd->bhij", ["q", "k"]), ("bhij,bhjd->bhid", ["p", "k"]), ("bnd,dh->bnh", ["x", "w"]),
           ("...id,...jd->...ij", ["q", "k"]), ("ij->ji", ["w"]), ("abc->c", ["x"]), ("bnd,dh", ["x", "w"]),
           ("bhid->", ["q"]), ("bnd,bnd->bn", ["x", "x"]), ("...ij,jk->...ik", ["q", "r"])]
    outs = [b.node("Einsum", ins, equation=eq) for eq, ins in eqs]
    path = save_typed(b, str(tmp_path / "einsum.onnx"),
                      [("q", T.FLOAT, [2, 3, 4, 5]), ("k", T.FLOAT, [2, 3, 4, 5]), ("p", T.FLOAT, [2, 3, 4, 4]),
                       ("x", T.FLOAT, [2, 6, 5]), ("w", T.FLOAT, [5, 7]), ("r", T.FLOAT, [5, 6])], outs, opset=12)
    shapes = {"q": (2, 3, 4, 5), "k": (2, 3, 4, 5), "p": (2, 3, 4, 4), "x": (2, 6, 5), "w": (5, 7), "r": (5, 6)}
    run_both(path, {n: RNG.uniform(-1, 1, s).astype(np.float32) for n, s in shapes.items()})
    # A sum then a transpose of one operand, which ONNX Runtime 1.23 fails on: against numpy.
    b3 = Builder()
    y3 = b3.node("Einsum", ["x"], equation="abc->cb")
    x = RNG.uniform(-1, 1, (2, 6, 5)).astype(np.float32)
    (ours,) = rt.Model(b3.save(str(tmp_path / "sum_t.onnx"), [("x", [2, 6, 5])], [y3], opset=12)).run([x])
    assert np.allclose(ours, np.einsum("abc->cb", x), atol=1e-5)
    b2 = Builder()
    y = b2.node("Einsum", ["x"], equation="ii->i")
    with pytest.raises(ValueError, match="Einsum.*label 'i' repeats in one term"):
        rt.Model(b2.save(str(tmp_path / "diag.onnx"), [("x", [4, 4])], [y], opset=12))


def test_bicubic_resize_in_both_orders(tmp_path):
    # Super-resolution and segmentation heads upsample bicubically (cubic mode): every coordinate
    # mode, cubic_coeff_a and exclude_outside, on a conv's NHWC output and on ONNX's order.
    b = Builder()
    conv = b.node("Relu", [b.conv("x", 3, 8, 3, pads=[1, 1, 1, 1])])
    outs = []
    for src, coords, attrs, scale in ((conv, "half_pixel", {}, 2.0), ("x", "asymmetric", {}, 1.5),
                                      (conv, "align_corners", {}, 3.0), ("x", "pytorch_half_pixel", {}, 0.6),
                                      (conv, "half_pixel", {"cubic_coeff_a": -0.5, "exclude_outside": 1}, 1.75)):
        outs.append(b.node("Resize", [src, "", b.const([1.0, 1.0, scale, scale])], mode="cubic",
                           coordinate_transformation_mode=coords, **attrs))
    compare(b.save(str(tmp_path / "cubic.onnx"), [("x", [1, 3, 9, 7])], outs))


def test_named_symbolic_dims(tmp_path):
    # Exporters name a transformer's dims: batch_size and sequence_length are bound apart.
    b = Builder()
    y = b.node("Softmax", [b.node("MatMul", ["x", b.const(RNG.standard_normal((8, 8)))])], axis=-1)
    path = b.save(str(tmp_path / "seq.onnx"), [("x", ["batch_size", "sequence_length", 8])], [y])
    model = compare(path, batch=2, dims={"sequence_length": 5})
    assert model.inputs[0][1] == (2, 5, 8)
    with pytest.raises(ValueError, match="'seq_len'"):
        rt.Model(path, dims={"seq_len": 5})
    with pytest.raises(ValueError, match="'sequence_length' must be from 1"):
        rt.Model(path, dims={"sequence_length": 0})


def test_bert_as_torch_onnx_exports_it(tmp_path):
    # bench/graph/make_bert_export.py: int64 ids, mask and token types of [batch_size,
    # sequence_length], position ids sliced from a buffer (a constant subgraph computed at load),
    # decomposed LayerNorm, the extended mask, heads split by Shape-derived Reshapes, erf GELU,
    # the pooler; inputs taken in the graph's order.
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "bench" / "graph"))
    import make_bert_export

    path = str(tmp_path / "bert.onnx")
    onnx.save(make_bert_export.bert(layers=2, hidden=64, heads=4, vocab=100), path)
    model = rt.Model(path, batch=2, dims={"sequence_length": 8}, threads=2)
    assert [n for n, _ in model.inputs] == ["input_ids", "attention_mask", "token_type_ids"]
    feeds = {"input_ids": RNG.integers(0, 100, (2, 8)), "attention_mask": np.ones((2, 8), np.int64),
             "token_type_ids": np.repeat([[0] * 4 + [1] * 4], 2, axis=0)}
    feeds["attention_mask"][0, -3:] = 0
    ours = model.run([feeds[n] for n, _ in model.inputs])
    theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
        None, {k: v.astype(np.int64) for k, v in feeds.items()})
    for a, r in zip(ours, theirs):
        assert a.shape == r.shape
        assert float(np.max(np.abs(a - r) / np.maximum(np.abs(r), 1))) <= 1e-4


def test_resize_upsample_conv_transpose_instance_norm_and_tile(tmp_path):
    # The decoder side of segmentation and style-transfer models: every coordinate mode and
    # nearest mode of Resize, opset 9's Upsample, transposed convs with groups, strides,
    # dilations, pads, output_padding and auto_pad, InstanceNormalization, Tile.
    b = Builder()
    x = b.node("Relu", [b.conv("x", 4, 4, 3, pads=[1, 1, 1, 1])])
    outs = []
    for coords in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"):
        outs.append(b.node("Resize", [x, "", b.const([1, 1, 2, 1.5])], mode="linear",
                           coordinate_transformation_mode=coords))
    for nearest in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
        outs.append(b.node("Resize", [x, "", "", b.ints([1, 4, 11, 13])], mode="nearest", nearest_mode=nearest,
                           coordinate_transformation_mode="asymmetric"))
    outs.append(b.node("Resize", [x, "", b.const([1, 1, 3, 3])], mode="nearest"))
    w = b.const(RNG.standard_normal((4, 3, 3, 3)) * 0.2)
    outs.append(b.node("ConvTranspose", [x, w, b.const(RNG.standard_normal(6))], strides=[2, 2], pads=[1, 0, 1, 2],
                       output_padding=[1, 0], group=2))
    for pad in ("SAME_UPPER", "SAME_LOWER"):  # odd total padding both ways
        outs.append(b.node("ConvTranspose", [x, b.const(RNG.standard_normal((4, 2, 3, 2)) * 0.2)], strides=[2, 1],
                           auto_pad=pad))
    outs.append(b.node("ConvTranspose", [x, b.const(RNG.standard_normal((4, 2, 2, 2)) * 0.2)], dilations=[2, 2]))
    outs.append(b.node("InstanceNormalization", [x, b.const(RNG.uniform(0.5, 1.5, 4)),
                                                 b.const(RNG.uniform(-0.1, 0.1, 4))], epsilon=1e-5))
    outs.append(b.node("Tile", [x, b.ints([1, 2, 1, 3])]))
    compare(b.save(str(tmp_path / "decoder.onnx"), [("x", [1, 4, 5, 7])], outs))
    b9 = Builder()
    up = b9.node("Upsample", [b9.node("Relu", ["x"]), b9.const([1, 1, 2, 3])], mode="nearest")
    lin = b9.node("Upsample", ["x", b9.const([1, 1, 2, 2])], mode="linear")
    compare(b9.save(str(tmp_path / "upsample.onnx"), [("x", [1, 2, 4, 5])], [up, lin], opset=9))


def test_mobilenet_v2_blocks_relu6_fused(tmp_path):
    # Clip(0, 6) after a conv and a depthwise conv (min and max as inputs, opset 11+, and as
    # attributes, opset 6) runs as the kernels' relu6 epilogue; a Clip of other bounds stays a step.
    b = Builder()
    x = b.node("Clip", [b.bn(b.conv("x", 8, 48, 1, bias=False), 48), b.const(0.0), b.const(6.0)])
    x = b.node("Clip", [b.bn(b.conv(x, 48, 48, 3, bias=False, group=48, pads=[1, 1, 1, 1], strides=[2, 2]), 48),
                        b.const(0.0), b.const(6.0)])
    y = b.bn(b.conv(x, 48, 16, 1, bias=False), 16)
    z = b.node("Clip", [b.conv(y, 16, 16, 3, pads=[1, 1, 1, 1]), b.const(-1.0), b.const(1.0)])
    model = compare(b.save(str(tmp_path / "mbv2.onnx"), [("x", ["N", 8, 16, 16])], [b.node("Add", [y, z])]), batch=2)
    epilogues = [s["workload"].get("epilogue", []) for s in model.describe()["steps"] if s["kind"] == "kernel"]
    assert epilogues[0][-1] == "relu6" and epilogues[1][-1] == "relu6", epilogues
    assert all("relu6" not in e for e in epilogues[2:]), epilogues


def test_densenet_layers_normalise_concats_in_nhwc(tmp_path):
    # DenseNet's layer: BatchNormalization and ReLU of a channel concat of conv outputs (held
    # NHWC), then a 1x1 and a 3x3 conv, concatenated again.
    b = Builder()
    features = b.conv("x", 3, 8, 3, pads=[1, 1, 1, 1])
    for i in range(3):
        c = 8 + 4 * i
        y = b.conv(b.node("Relu", [b.bn(features, c)]), c, 16, 1, bias=False)
        y = b.conv(b.node("Relu", [b.bn(y, 16)]), 16, 4, 3, bias=False, pads=[1, 1, 1, 1])
        features = b.node("Concat", [features, y], axis=1)
    model = compare(b.save(str(tmp_path / "dense.onnx"), [("x", ["N", 3, 12, 12])], [features]), batch=2)
    assert sum(s["kind"] == "layout" for s in model.describe()["steps"]) <= 2


def test_convs_write_their_outputs_into_channel_concats_in_place(tmp_path):
    # SqueezeNet's fire module (a 1x1 and a 3x3 conv concatenated: no concat step), and an
    # Inception-like concat along axis -3 of a conv, a pool branch, a conv output another node
    # reads too and a conv with a residual Add: the two that are not convs' sole outputs copied
    # into place by the one concat step left; at a batch of two.
    b = Builder()
    squeezed = b.node("Relu", [b.conv("x", 16, 8, 1)])
    e1 = b.node("Relu", [b.conv(squeezed, 8, 12, 1)])
    e3 = b.node("Relu", [b.conv(squeezed, 8, 20, 3, pads=[1, 1, 1, 1])])
    fire = b.node("Concat", [e1, e3], axis=1)
    after = b.node("Relu", [b.conv(fire, 32, 8, 1)])
    branch = b.conv("x", 16, 5, 1)
    pool = b.node("MaxPool", ["x"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    shared = b.conv("x", 16, 6, 3, pads=[1, 1, 1, 1])
    skip = b.node("Relu", [b.node("Add", [b.conv("x", 16, 16, 3, pads=[1, 1, 1, 1]), "x"])])
    mixed = b.node("Concat", [branch, pool, shared, skip], axis=-3)
    path = b.save(str(tmp_path / "concats.onnx"), [("x", ["N", 16, 7, 7])],
                  [after, mixed, b.node("Sigmoid", [shared])])
    steps = compare(path, batch=2).describe()["steps"]
    placed = [s["into_concat"] for s in steps if "into_concat" in s]
    assert sorted((p["offset"], p["ld"]) for p in placed) == [(0, 32), (0, 43), (12, 32), (27, 43)]
    assert sum(s.get("op") == "Concat" for s in steps) == 1


def test_constant_of_shape_and_range_as_exporters_write_them(tmp_path):
    # A default attention mask (ConstantOfShape of the ids' shape, value 1 as int64) and position
    # ids (Range to the sequence length read from Shape): constant once the dims are bound,
    # computed at load (the steps each node would run, run once).
    b = Builder()
    seq = b.node("Gather", [b.node("Shape", ["x"]), b.ints(1)], axis=0)
    positions = b.node("Cast", [b.node("Range", [b.ints(0), seq, b.ints(1)])], to=T.FLOAT)
    ones = b.node("Cast", [b.node("ConstantOfShape", [b.node("Shape", ["x"])],
                                  value=helper.make_tensor("v", T.INT64, [1], [1]))], to=T.FLOAT)
    y = b.node("Add", [b.node("Mul", ["x", ones]), positions])
    z = b.node("Add", [b.node("Range", [b.const(0.5), b.const(4.0), b.const(0.75)]), b.const(1.0)])
    compare(b.save(str(tmp_path / "range.onnx"), [("x", ["N", "S"])], [y, z]), batch=3)


def test_pad_modes(tmp_path):
    # Style transfer and super-resolution exports pad by reflection before their convs.
    b = Builder()
    outs = [b.node("Pad", ["x", b.ints([0, 0, 2, 1, 0, 0, 1, 2])], mode=mode) for mode in ("reflect", "edge")]
    outs.append(b.node("Pad", ["x", b.ints([0, 0, -1, 2, 0, 0, 1, -2]), b.const(0.5)], mode="constant"))
    outs.append(b.conv(b.node("Pad", ["x", b.ints([0, 0, 1, 1, 0, 0, 1, 1])], mode="reflect"), 3, 4, 3))
    compare(b.save(str(tmp_path / "pads.onnx"), [("x", [1, 3, 5, 6])], outs))


def test_depth_to_space_space_to_depth_and_arg_reductions(tmp_path):
    # Sub-pixel convolution (super-resolution) and a segmentation head's ArgMax, with ties.
    b = Builder()
    x = b.conv("x", 4, 8, 3, pads=[1, 1, 1, 1])
    outs = [b.node("DepthToSpace", [x], blocksize=2, mode=m) for m in ("DCR", "CRD")]
    outs.append(b.node("SpaceToDepth", [x], blocksize=2))
    ties = b.node("Floor", [b.node("Mul", ["x", b.const(2.0)])])
    for op in ("ArgMax", "ArgMin"):  # int64 indices, cast so the graph's outputs are float
        outs.append(b.node("Cast", [b.node(op, [ties], axis=1, keepdims=1)], to=T.FLOAT))
        outs.append(b.node("Cast", [b.node(op, [ties], axis=-1, keepdims=0, select_last_index=1)], to=T.FLOAT))
    compare(b.save(str(tmp_path / "d2s.onnx"), [("x", [1, 4, 6, 4])], outs))


def test_transformer_layer_ops(tmp_path):
    b = Builder()
    d, h = 32, 4
    x = "x"
    q = b.node("Add", [b.node("MatMul", [x, b.const(RNG.standard_normal((d, d)) * 0.2)]), b.const(RNG.standard_normal(d))])
    k = b.node("MatMul", [x, b.const(RNG.standard_normal((d, d)) * 0.2)])
    qh = b.node("Transpose", [b.node("Reshape", [q, b.ints([1, 8, h, d // h])])], perm=[0, 2, 1, 3])
    kh = b.node("Transpose", [b.node("Reshape", [k, b.ints([1, 8, h, d // h])])], perm=[0, 2, 3, 1])
    scores = b.node("Div", [b.node("MatMul", [qh, kh]), b.const(np.sqrt(d // h))])
    attn = b.node("Softmax", [scores], axis=-1)
    ctx = b.node("MatMul", [attn, b.node("Transpose", [b.node("Reshape", [x, b.ints([1, 8, h, d // h])])],
                                         perm=[0, 2, 1, 3])])
    ctx = b.node("Reshape", [b.node("Transpose", [ctx], perm=[0, 2, 1, 3]), b.ints([1, 8, d])])
    y = b.node("LayerNormalization", [b.node("Add", [ctx, x]), b.const(RNG.uniform(0.5, 1.5, d)),
                                      b.const(RNG.uniform(-0.1, 0.1, d))], axis=-1, epsilon=1e-5)
    ff = b.node("Relu", [b.node("Add", [b.node("MatMul", [y, b.const(RNG.standard_normal((d, 64)) * 0.2)]),
                                        b.const(RNG.standard_normal(64))])])
    h1 = b.node("MatMul", [y, b.const(RNG.standard_normal((d, 64)) * 0.2)])  # GELU as exporters write it
    ff_erf = b.node("Mul", [b.node("Mul", [h1, b.node("Add", [b.node("Erf", [b.node("Div", [h1, b.const(1.4142135)])]),
                                                              b.const(1.0)])]), b.const(0.5)])
    silu_in = b.node("MatMul", [y, b.const(RNG.standard_normal((d, 64)) * 0.2)])
    silu = b.node("Mul", [silu_in, b.node("Sigmoid", [silu_in])])
    mixed = b.node("Sub", [b.node("Add", [ff, ff_erf]), silu])
    acts = [b.node("Clip", [mixed, b.const(0.0), b.const(6.0)]), b.node("LeakyRelu", [mixed], alpha=0.2),
            b.node("HardSigmoid", [mixed]), b.node("Tanh", [mixed]), b.node("Max", [mixed, b.const(0.1)]),
            b.node("Pow", [b.node("Abs", [mixed]), b.const(0.5)]), b.node("Erf", [mixed]),
            b.node("LogSoftmax", [mixed], axis=1)]
    path = b.save(str(tmp_path / "layer.onnx"), [("x", [1, 8, d])], acts, opset=17)
    m = compare(path)
    kernels = [s["workload"]["epilogue"] for s in m.describe()["steps"] if s["kind"] == "kernel"]
    assert ["bias", "relu", "add"] in kernels and ["silu"] in kernels  # the exact epilogues fused


def test_opset_11_softmax_lrn_gather_and_a_silu_conv(tmp_path):
    b = Builder()
    c = b.conv("x", 6, 12, 3, pads=[1, 1, 1, 1])
    silu = b.node("Mul", [c, b.node("Sigmoid", [c])])       # the conv's epilogue
    norm = b.node("LRN", [silu], size=5, alpha=1e-3, beta=0.75, bias=2.0)
    soft = b.node("Softmax", [norm], axis=1)                  # opset 11: over C x H x W
    picked = b.node("Gather", [norm, b.ints([2, 0, -1])], axis=1)
    clipped = b.node("Clip", [picked, b.const(-0.5)])         # min only
    gate = b.node("Sigmoid", [b.conv("x", 6, 6, 3, group=6, pads=[1, 1, 1, 1])])  # a depthwise conv's
    path = b.save(str(tmp_path / "old.onnx"), [("x", [1, 6, 5, 7])], [soft, clipped, gate], opset=11)
    m = compare(path)
    steps = m.describe()["steps"]
    assert not [s for s in steps if s.get("op") in ("Sigmoid", "Mul")]
    assert sorted(s["workload"]["epilogue"] for s in steps if s["kind"] == "kernel") == [["bias", "sigmoid"],
                                                                                         ["bias", "silu"]]


def test_resize_scales_of_some_axes_aspect_policies_and_downsampling(tmp_path):
    # Downsampling by a scale whose output is not a whole multiple: the coordinates map back by
    # the scale, not by out / in. Then opset 18's Resize: scales or sizes of the axes listed (in
    # either order), sizes under each keep_aspect_ratio_policy, antialias on an upsampling (no
    # change there); its outputs' shapes declared, as exporters write them (Debian's libonnx
    # 1.12 infers no opset 18 Resize).
    b = Builder()
    x = b.node("Relu", [b.conv("x", 3, 3, 3, pads=[1, 1, 1, 1])])
    outs = [b.node("Resize", [x, "", b.const([1, 1, 0.6, 0.7])], mode=mode, coordinate_transformation_mode=coords)
            for mode in ("linear", "nearest") for coords in ("half_pixel", "align_corners", "asymmetric")]
    compare(b.save(str(tmp_path / "downsample.onnx"), [("x", [1, 3, 9, 11])], outs))
    b18 = Builder()
    x = b18.node("Relu", [b18.conv("x", 3, 3, 3, pads=[1, 1, 1, 1])])
    outs = [(b18.node("Resize", [x, "", b18.const([0.6, 1.5])], mode="linear", axes=[3, 2]), [1, 3, 13, 6]),
            (b18.node("Resize", [x, "", b18.const([1.7, 2])], mode="linear", axes=[2, 3], antialias=1),
             [1, 3, 15, 22])]
    for policy, shape in (("not_larger", [1, 3, 4, 5]), ("not_smaller", [1, 3, 7, 9])):
        for mode in ("nearest", "linear"):
            outs.append((b18.node("Resize", [x, "", "", b18.ints([7, 5])], mode=mode, axes=[2, 3],
                                  keep_aspect_ratio_policy=policy), shape))
    graph = helper.make_graph(b18.nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [1, 3, 9, 11])],
                              [helper.make_tensor_value_info(o, T.FLOAT, s) for o, s in outs], b18.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "resize18.onnx"))
    compare(str(tmp_path / "resize18.onnx"))


def test_a_resize_the_engine_cannot_plan_is_refused_by_name(tmp_path):
    # Scales fed at run time fix no output shape and no coordinates; antialiased downsampling
    # widens the filter, which the engine does not implement.
    b = Builder()
    y = b.node("Resize", ["x", "", "s"], mode="linear")
    graph = helper.make_graph(b.nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [1, 1, 4, 4]),
                                             helper.make_tensor_value_info("s", T.FLOAT, [4])],
                              [helper.make_tensor_value_info(y, T.FLOAT, [1, 1, 2, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "runtime_scales.onnx"))
    with pytest.raises(ValueError, match="input 'scales' \\('s'\\) must be a constant"):
        rt.Model(str(tmp_path / "runtime_scales.onnx"))
    b2 = Builder()
    b2.node("Resize", ["x", "", b2.const([1, 1, 0.5, 0.5])], mode="linear", antialias=1)
    path = b2.save(str(tmp_path / "antialias.onnx"), [("x", [1, 1, 4, 4])], [b2.nodes[-1].output[0]], opset=18)
    with pytest.raises(ValueError, match="antialias=1 downsampling"):
        rt.Model(path)


def test_a_causal_mask_kept_as_a_bool_or_uint8_buffer(tmp_path):
    # GPT-2's attention keeps its causal mask as a buffer, which exporters write as a bool (or,
    # in older exports, a uint8 one cast to bool) initializer read by Where.
    b = Builder()
    tri = np.tril(np.ones((1, 1, 6, 6), dtype=bool))
    b.inits.append(numpy_helper.from_array(tri, "mask_bool"))
    b.inits.append(numpy_helper.from_array(tri.astype(np.uint8), "mask_u8"))
    scores = b.node("MatMul", ["x", b.node("Transpose", ["x"], perm=[0, 1, 3, 2])])
    outs = []
    for mask in ("mask_bool", b.node("Cast", ["mask_u8"], to=T.BOOL)):
        outs.append(b.node("Softmax", [b.node("Where", [mask, scores, b.const(-1e4)])], axis=-1))
    compare(b.save(str(tmp_path / "causal.onnx"), [("x", [1, 2, 6, 8])], outs))


def test_a_dropout_runs_as_the_identity_unless_it_trains(tmp_path):
    b = Builder()
    b.inits.append(numpy_helper.from_array(np.array(False), "eval"))
    y = b.node("Dropout", [b.node("Relu", ["x"]), b.const(0.5), "eval"])
    compare(b.save(str(tmp_path / "eval.onnx"), [("x", [2, 8])], [y]))
    b2 = Builder()
    b2.inits.append(numpy_helper.from_array(np.array(True), "train"))
    y2 = b2.node("Dropout", ["x", b2.const(0.5), "train"])
    with pytest.raises(ValueError, match="training_mode: a Dropout that trains"):
        rt.Model(b2.save(str(tmp_path / "train.onnx"), [("x", [2, 8])], [y2]))


def test_integer_constants_of_every_width_and_empty_axes_are_read(tmp_path):
    # Exporters write constants in the integer type the framework held (uint32, int8, ...; ONNX
    # Runtime casts them, it takes no Pow exponent of those types), and a ReduceSum over every axis
    # with an empty axes constant (opset 13).
    b = Builder()
    widths = [np.int8, np.int16, np.uint16, np.uint32, np.uint64, np.int32]
    y = b.node("Abs", ["x"])
    for k, t in enumerate(widths):
        b.inits.append(numpy_helper.from_array(np.array([1, 2, 3, 2], dtype=t), "e%d" % k))
        y = b.node("Add", [y, b.node("Cast", ["e%d" % k], to=T.FLOAT)])
    b.inits.append(numpy_helper.from_array(np.array([], dtype=np.int64), "none"))
    total = b.node("ReduceSum", [y, "none"], keepdims=1)
    compare(b.save(str(tmp_path / "widths.onnx"), [("x", [3, 4])], [y, total]))


def test_a_constant_or_input_of_a_type_the_engine_does_not_read_is_refused_by_name(tmp_path):
    b = Builder()
    b.inits.append(numpy_helper.from_array(np.array([1, 2, 3, 4], dtype=np.float16), "half"))
    y = b.node("Add", ["x", b.node("Cast", ["half"], to=T.FLOAT)])
    with pytest.raises(ValueError, match="constant 'half' is float16; the engine reads"):
        rt.Model(b.save(str(tmp_path / "half.onnx"), [("x", [3, 4])], [y]))
    # A float8 input, a type Debian's ONNX library predates: named by its number, not taken as float.
    b2 = Builder()
    y2 = b2.node("Cast", ["x"], to=T.FLOAT)
    graph = helper.make_graph(b2.nodes, "f8", [helper.make_tensor_value_info("x", T.FLOAT8E4M3FN, [4])],
                              [helper.make_tensor_value_info(y2, T.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    onnx.save(model, str(tmp_path / "f8.onnx"))
    with pytest.raises(ValueError, match="input 'x' is (float8e4m3fn|ONNX data type 17); the engine takes"):
        rt.Model(str(tmp_path / "f8.onnx"))


def test_bad_inputs_are_refused_by_name(tmp_path):
    b = Builder()
    y = b.node("Relu", [b.conv("x", 2, 2, 1)])
    path = b.save(str(tmp_path / "tiny.onnx"), [("x", [1, 2, 3, 3])], [y])
    m = rt.Model(path)
    with pytest.raises(ValueError, match="'x' has another shape"):
        m.run([np.zeros((1, 2, 3, 4), np.float32)])
    with pytest.raises(TypeError, match="'x' must be a float32"):
        m.run([np.zeros((1, 2, 3, 3), np.float64)])
    with pytest.raises(ValueError, match="1 inputs expected"):
        m.run([])
    b2 = Builder()
    b2.node("Det", ["x"])  # an op the engine has no step for
    path2 = b2.save(str(tmp_path / "det.onnx"), [("x", [1, 1, 4, 4])], [b2.nodes[-1].output[0]])
    with pytest.raises(ValueError, match="Det.*the engine has no step for this op"):
        rt.Model(path2)
    b3 = Builder()
    b3.node("Cast", [b3.node("Cast", ["x"], to=T.FLOAT16)], to=T.FLOAT)
    path3 = b3.save(str(tmp_path / "cast.onnx"), [("x", [1, 4])], [b3.nodes[-1].output[0]])
    with pytest.raises(ValueError, match="a cast to float16 from 'float'"):
        rt.Model(path3)
    (tmp_path / "cut.onnx").write_bytes(open(path, "rb").read()[:40])
    with pytest.raises(ValueError, match="cut.onnx"):
        rt.Model(str(tmp_path / "cut.onnx"))


def test_slice_split_pad_and_reductions(tmp_path):
    b = Builder()
    x = b.node("Relu", [b.conv("x", 4, 12, 3, pads=[1, 1, 1, 1])])
    b.count += 1
    parts = ["split_a", "split_b", "split_c"]
    b.nodes.append(helper.make_node("Split", [x, b.ints([2, 4, 6])], parts, axis=1, name="split"))
    sliced = b.node("Slice", [parts[2], b.ints([1, -1]), b.ints([5, -7]), b.ints([1, 3]), b.ints([2, -1])])
    padded = b.node("Pad", [parts[0], b.ints([0, 1, 2, 0, 0, 0, 1, 3]), b.const(0.5)], mode="constant")
    cropped = b.node("Pad", [parts[1], b.ints([0, 0, -1, 0, 0, 0, 0, -2])])
    means = [b.node("ReduceMean", [parts[1]], axes=[2, 3], keepdims=1),
             b.node("ReduceMean", [parts[1]], axes=[-1], keepdims=0),
             b.node("ReduceSum", [parts[2], b.ints([1])], keepdims=1),
             b.node("ReduceMax", [x], axes=[1], keepdims=0),
             b.node("ReduceMin", [x], keepdims=1)]
    path = b.save(str(tmp_path / "slices.onnx"), [("x", [1, 4, 9, 10])], [sliced, padded, cropped] + means)
    compare(path)


def test_large_plain_ops_split_over_threads(tmp_path):
    """Tensors large enough that the elementwise ops, transposes (every kind of perm: the last
    dim kept, moved, and the 2-D case), softmax and layer norm split over two threads, each
    thread starting mid-tensor; broadcasts along inner and outer dims and one long row."""
    b = Builder()
    x = "x"  # [2, 12, 64, 48]
    outs = [b.node("Transpose", [x], perm=p) for p in ([0, 2, 1, 3], [0, 2, 3, 1], [3, 1, 2, 0], [0, 1, 3, 2],
                                                       [1, 0, 2, 3], [3, 2, 1, 0])]
    outs.append(b.node("Softmax", [x], axis=-1))
    outs.append(b.node("LayerNormalization", [x, b.const(RNG.uniform(0.5, 1.5, 48)), b.const(RNG.uniform(-0.1, 0.1, 48))],
                       axis=-1, epsilon=1e-5))
    outs.append(b.node("Add", [x, b.const(RNG.standard_normal(48))]))
    outs.append(b.node("Mul", [x, b.const(RNG.standard_normal((2, 1, 64, 1)))]))
    outs.append(b.node("Erf", [x]))
    flat = b.node("Reshape", [x, b.ints([-1])])
    outs.append(b.node("Sub", [flat, b.node("Sigmoid", [flat])]))
    outs.append(b.node("Transpose", [b.node("Reshape", [x, b.ints([24 * 64, 48])])], perm=[1, 0]))
    outs.append(b.bn(x, 12))  # NCHW
    path = b.save(str(tmp_path / "large.onnx"), [("x", [2, 12, 64, 48])], outs, opset=17)
    for threads in (1, 2):
        compare(path, threads=threads)


def test_wide_nhwc_pools_split_over_threads(tmp_path):
    """Pools of a conv's NHWC output with more channels than one 64-channel register block (72:
    one block and 8 left over), large enough that they split over two threads, each starting
    mid-image; every window kind of test_every_pool_attribute again, and a batch of two."""
    b = Builder()
    c = b.node("Relu", [b.conv("x", 8, 72, 3, pads=[1, 1, 1, 1])])
    outs = [
        b.node("MaxPool", [c], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        b.node("MaxPool", [c], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
        b.node("MaxPool", [c], kernel_shape=[2, 3], strides=[1, 2], pads=[0, 1, 1, 0]),
        b.node("MaxPool", [c], kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 1, 1, 1]),
        b.node("AveragePool", [c], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1),
        b.node("AveragePool", [c], kernel_shape=[3, 3], strides=[2, 2], pads=[0, 1, 1, 0], count_include_pad=0,
               ceil_mode=1),
    ]
    path = b.save(str(tmp_path / "wide_pools.onnx"), [("x", [1, 8, 37, 41])], outs, opset=17)
    for threads in (1, 2):
        compare(path, batch=2, threads=threads)


def test_layout_changes_split_over_threads(tmp_path):
    """The layout steps around the convs (ONNX order to NHWC and back) at sizes that split over
    two threads mid-image: three images of an RGB input (its own loop), of a 5-channel one, and
    of 20 channels to a 40-channel output (tiles of 16 channels and 16 pixels, part-filled)."""
    for c, hw, k in ((3, [60, 70], 8), (5, [50, 50], 8), (20, [33, 45], 40)):
        b = Builder()
        y = b.conv("x", c, k, 3, pads=[1, 1, 1, 1])
        path = b.save(str(tmp_path / ("layout%d.onnx" % c)), [("x", [3, c] + hw)], [y])
        for threads in (1, 2):
            compare(path, threads=threads)


def test_a_large_batch_norm_of_a_concat_in_nhwc_splits_over_threads(tmp_path):
    """DenseNet's pattern at a size that splits: two convs' NHWC outputs concatenated, then a
    BatchNormalization and a ReLU over the concat, both in NHWC."""
    b = Builder()
    cat = b.node("Concat", [b.conv("x", 8, 32, 3, pads=[1, 1, 1, 1]), b.conv("x", 8, 24, 1)], axis=1)
    y = b.node("Relu", [b.bn(cat, 56)])
    path = b.save(str(tmp_path / "bn.onnx"), [("x", [1, 8, 48, 64])], [y])
    for threads in (1, 2):
        m = compare(path, threads=threads)
    ops = [s.get("op") for s in m.describe()["steps"]]
    assert "BatchNormalization" in ops
    assert "Relu" not in ops  # the BN's one reader runs in its pass


def test_a_batch_norm_runs_its_sole_relu_in_its_pass_and_only_then(tmp_path):
    """BatchNormalization then Relu in ONNX order (a graph input) and in NHWC (a conv's output):
    the Relu runs in the BN's pass; a BN result that something else reads too, or that is a
    graph output, keeps its own Relu step."""
    b = Builder()
    alone = b.node("Relu", [b.bn("x", 8)])                                   # NCHW, absorbed
    conv = b.conv("x", 8, 16, 3, pads=[1, 1, 1, 1])
    shared = b.bn(conv, 16)
    both = [b.node("Relu", [shared]), b.node("Add", [shared, conv])]     # two readers: kept
    out_bn = b.bn(conv, 16)
    outs = [alone] + both + [out_bn, b.node("Relu", [out_bn])]           # a graph output: kept
    path = b.save(str(tmp_path / "bn_relu.onnx"), [("x", [1, 8, 40, 48])], outs)
    for threads in (1, 2):
        m = compare(path, threads=threads)
    ops = [s.get("op") for s in m.describe()["steps"]]
    assert ops.count("BatchNormalization") == 3
    assert ops.count("Relu") == 2


def test_shufflenet_units_stay_in_nhwc(tmp_path):
    """ShuffleNet v2 as torchvision exports it: a 24-channel max pool (one vector and a part of
    one), units that Split their channels, Concat, and shuffle them by Reshape, Transpose and
    Reshape; and Slices of a conv's output along every axis (a step of 2, a negative one). All
    of it runs in the convs' NHWC order: no layout step after the input's."""
    b = Builder()
    x = b.node("Relu", [b.conv("x", 3, 24, 3, pads=[1, 1, 1, 1], strides=[2, 2])])
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])

    def shuffle(t, c):
        t = b.node("Reshape", [t, b.ints([-1, 2, c // 2, 9, 9])])
        return b.node("Reshape", [b.node("Transpose", [t], perm=[0, 2, 1, 3, 4]), b.ints([-1, c, 9, 9])])

    left = b.node("Relu", [b.conv(b.conv(x, 24, 24, 3, pads=[1, 1, 1, 1], group=24), 24, 24, 1)])
    right = b.node("Relu", [b.conv(x, 24, 24, 1)])
    x = shuffle(b.node("Concat", [left, right], axis=1), 48)
    b.count += 1
    keep, branch = "half_a", "half_b"
    b.nodes.append(helper.make_node("Split", [x, b.ints([24, 24])], [keep, branch], axis=1, name="split"))
    branch = b.node("Relu", [b.conv(b.conv(branch, 24, 24, 3, pads=[1, 1, 1, 1], group=24), 24, 24, 1)])
    x = shuffle(b.node("Concat", [keep, branch], axis=1), 48)
    pooled = b.node("MaxPool", [b.node("Relu", [b.conv(x, 48, 20, 1)])], kernel_shape=[2, 2], strides=[1, 1])
    slices = [b.node("Slice", [x, b.ints([1, 0, 8]), b.ints([40, 9, -10]), b.ints([1, 2, 3]), b.ints([2, 1, -1])]),
              b.node("Slice", [x, b.ints([-3]), b.ints([100]), b.ints([1])])]
    path = b.save(str(tmp_path / "shufflenet.onnx"), [("x", [1, 3, 35, 35])], [x, pooled] + slices)
    for threads in (1, 2):
        m = compare(path, batch=2, threads=threads)
    steps = m.describe()["steps"]
    layouts = sorted((s["to"], s["node"]) for s in steps if s["kind"] == "layout")
    assert layouts == sorted([("nhwc", "x")] + [("nchw", t) for t in [x, pooled] + slices])
    assert sum(1 for s in steps if s.get("as") == "channel shuffle") == 2


def test_erf_gelus_as_exporters_write_them_run_as_one_step(tmp_path):
    """The erf GELU x * 0.5 * (1 + erf(x / sqrt 2)) in the orders exporters write it (torch's
    nn.GELU: Div, Erf, Add, Mul by x, Mul by 0.5; Hugging Face's: Mul by 0.5 first; a Mul by
    1 / sqrt 2 with the constant first), after a MatMul and on an input, runs as one step each;
    near misses (plus 2 instead of 1; an inner tensor that a second node reads) stay as written."""
    b = Builder()
    h = b.node("MatMul", ["x", b.const(RNG.standard_normal((32, 48)) * 0.2)])

    def gelu(x, half_first=False, scale_first=False, one=1.0):
        s = (b.node("Mul", [b.const(np.float32(0.7071067690849304)), x]) if scale_first
             else b.node("Div", [x, b.const(np.float32(1.4142135381698608))]))
        e = b.node("Add", [b.node("Erf", [s]), b.const(np.float32(one))])
        if half_first:
            return b.node("Mul", [b.node("Mul", [x, b.const(np.float32(0.5))]), e])
        return b.node("Mul", [b.node("Mul", [x, e]), b.const(np.float32(0.5))])

    outs = [gelu(h), gelu(h, half_first=True), gelu("x", scale_first=True), gelu(h, one=2.0)]
    shared = b.node("Erf", [b.node("Div", ["x", b.const(np.float32(1.4142135381698608))])])
    outs += [b.node("Mul", [b.node("Mul", ["x", b.node("Add", [shared, b.const(np.float32(1.0))])]),
                            b.const(np.float32(0.5))]), shared]
    path = b.save(str(tmp_path / "gelu.onnx"), [("x", [2, 7, 32])], outs)
    m = compare(path)
    steps = m.describe()["steps"]
    assert sum(1 for s in steps if s.get("as") == "erf gelu") == 3
    assert sum(1 for s in steps if s.get("op") == "Erf") == 2


def test_tanh_gelus_as_gpt2_and_torch_export_them_run_as_one_step(tmp_path):
    """The tanh GELU 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) as exporters write it
    (GPT-2's gelu_new: Pow(x, 3) and Mul by 0.5 first; torch's approximate="tanh" below opset 20:
    (x * x) * x, or x * (x * x), and the 0.5 last), after a MatMul and on an input, one with an
    activation the importer groups with its last node; near misses (a cube by Pow 2; an inner tensor a graph output) stay as
    written. Tanh itself over tiny to huge values, NaN and infinities; Where with GPT-2's causal
    mask broadcast over the heads."""
    b = Builder()
    h = b.node("Add", [b.node("MatMul", ["x", b.const(RNG.standard_normal((32, 48)) * 0.6)]),
                       b.const(RNG.uniform(-0.1, 0.1, 48))])

    def gelu(x, cube="pow", half_first=True, power=3.0):
        if cube == "pow":
            c = b.node("Pow", [x, b.const(np.float32(power))])
        elif cube == "square_first":
            c = b.node("Mul", [b.node("Mul", [x, x]), x])
        else:
            c = b.node("Mul", [x, b.node("Mul", [x, x])])
        inner = b.node("Add", [x, b.node("Mul", [b.const(np.float32(0.044715)), c])])
        t = b.node("Add", [b.node("Tanh", [b.node("Mul", [inner, b.const(np.float32(np.sqrt(2 / np.pi)))])]),
                           b.const(np.float32(1.0))])
        if half_first:
            return b.node("Mul", [b.node("Mul", [x, b.const(np.float32(0.5))]), t]), inner
        return b.node("Mul", [b.node("Mul", [x, t]), b.const(np.float32(0.5))]), inner

    outs = [gelu(h)[0], gelu(h, "square_first", False)[0], gelu("x", "square_last")[0], gelu(h, power=2.0)[0]]
    outs.append(b.node("Sigmoid", [gelu("x", "square_first")[0]]))
    exposed, inner = gelu("x", "square_last", False)
    outs += [exposed, inner]
    wide = b.node("Mul", ["x", b.const(np.float32(30.0))])
    tiny = b.node("Mul", ["x", b.const(np.float32(1e-6))])
    inf = b.node("Reciprocal", [b.node("Relu", ["x"])])  # +inf where x <= 0
    outs += [b.node("Tanh", [wide]), b.node("Div", [b.node("Tanh", [tiny]), tiny]),
             b.node("Tanh", [b.node("Neg", [inf])]), b.node("Cast", [b.node("IsNaN", [b.node("Tanh", [b.node("Mul", [inf, b.const(0.0)])])])], to=T.FLOAT)]
    b.inits.append(numpy_helper.from_array(np.tril(np.ones((7, 7), bool)).reshape(1, 1, 7, 7), "causal"))
    scores = b.node("MatMul", [b.node("Reshape", ["x", b.ints([2, 4, 7, 8])]), b.const(RNG.standard_normal((8, 7)))])
    outs.append(b.node("Where", ["causal", scores, b.const(np.float32(-3.4e38))]))
    path = b.save(str(tmp_path / "tanh_gelu.onnx"), [("x", [2, 7, 32])], outs)
    m = compare(path)
    steps = m.describe()["steps"]
    assert sum(1 for s in steps if s.get("as") == "tanh gelu") == 4
    assert sum(1 for s in steps if s.get("op") == "Tanh") == 6


def test_transposed_convs_run_as_a_matmul_and_a_scatter_add(tmp_path):
    """A U-Net's decoder step (a 2x2 stride-2 ConvTranspose with its bias, a ReLU, a Concat with
    the skip, a conv), transposed convs whose windows overlap (3x3 stride 2 with pads and
    output_padding, a dilation of 2, SAME_UPPER), one of the graph's input: each of one group
    and constant weights runs as the importer's matmul task and the windows' scatter-add; one of
    two groups, and one whose weights are an input, as written. Batch 2, one and two threads."""
    b = Builder()
    skip = b.node("Relu", [b.conv("x", 6, 16, 3, pads=[1, 1, 1, 1])])
    low = b.node("MaxPool", [skip], kernel_shape=[2, 2], strides=[2, 2])
    deep = b.node("Relu", [b.conv(low, 16, 32, 3, pads=[1, 1, 1, 1])])
    up = b.node("Relu", [b.node("ConvTranspose", [deep, b.const(RNG.standard_normal((32, 16, 2, 2)) * 0.2),
                                                  b.const(RNG.standard_normal(16))], kernel_shape=[2, 2],
                                strides=[2, 2])])
    decoded = b.conv(b.node("Concat", [skip, up], axis=1), 32, 8, 3, pads=[1, 1, 1, 1])
    outs = [decoded,
            b.node("ConvTranspose", [deep, b.const(RNG.standard_normal((32, 24, 3, 3)) * 0.2)], strides=[2, 2],
                   pads=[1, 0, 1, 2], output_padding=[1, 0]),
            b.node("ConvTranspose", [deep, b.const(RNG.standard_normal((32, 20, 2, 3)) * 0.2),
                                     b.const(RNG.standard_normal(20))], dilations=[2, 2], strides=[1, 2]),
            b.node("ConvTranspose", ["x", b.const(RNG.standard_normal((6, 18, 3, 3)) * 0.2)], strides=[2, 2],
                   auto_pad="SAME_UPPER"),
            b.node("ConvTranspose", [deep, b.const(RNG.standard_normal((32, 5, 3, 3)) * 0.2)], group=2,
                   strides=[2, 2]),
            b.node("ConvTranspose", [deep, "w"], strides=[2, 2])]
    path = b.save(str(tmp_path / "unet.onnx"), [("x", [2, 6, 14, 18]), ("w", [32, 8, 2, 2])], outs)
    for threads in (1, 2):
        m = compare(path, batch=2, threads=threads)
    steps = m.describe()["steps"]
    assert sum(1 for s in steps if s.get("as") == "scatter-add of the windows") == 4
    assert sum(1 for s in steps if s.get("op") == "ConvTranspose" and "as" not in s) == 2


def test_a_yolo_neck_upsamples_in_nhwc(tmp_path):
    """A YOLOv5 neck's top-down step: a conv's output upsampled 2x by Resize (nearest, as
    torch exports nn.Upsample; and linear, as an FPN's), concatenated with the finer map and
    convolved again, at a size that splits over two threads. It stays in NHWC: no layout step
    but the input's and the outputs'."""
    b = Builder()
    fine = b.node("Relu", [b.conv("x", 8, 24, 3, pads=[1, 1, 1, 1])])
    coarse = b.node("Relu", [b.conv(fine, 24, 40, 3, pads=[1, 1, 1, 1], strides=[2, 2])])
    near = b.node("Resize", [coarse, "", b.const([1, 1, 2, 2])], mode="nearest",
                  coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    lin = b.node("Resize", [coarse, "", b.const([1, 1, 2, 2])], mode="linear",
                 coordinate_transformation_mode="half_pixel")
    outs = [b.conv(b.node("Concat", [near, fine], axis=1), 64, 16, 3, pads=[1, 1, 1, 1]),
            b.conv(b.node("Concat", [lin, fine], axis=1), 64, 16, 1)]
    path = b.save(str(tmp_path / "neck.onnx"), [("x", [1, 8, 40, 48])], outs)
    for threads in (1, 2):
        m = compare(path, threads=threads)
    layouts = sorted((s["to"], s["node"]) for s in m.describe()["steps"] if s["kind"] == "layout")
    assert layouts == sorted([("nhwc", "x")] + [("nchw", t) for t in outs])


def test_convs_no_conv_kernel_takes_run_as_im2col_and_matmuls(tmp_path):
    """Inception v3's 1x7 and 7x1 convs (pads [0, 3, 0, 3] and [3, 0, 3, 0]), grouped 3x3 convs
    of more channels a group than grouped_conv_nhwc takes (16 groups of 8 in and 2 out; 4 of 32
    and 6, dilated), uneven strides and pads, with their ReLUs, at a batch of 2 and a size that
    splits over two threads: each runs as its input windows (im2col) times each group's weights
    on the matmul kernel; one whose weights are an input keeps the plain loop."""
    b = Builder()
    x = b.node("Relu", [b.conv("x", 16, 128, 1)])
    wide = b.node("Relu", [b.conv(x, 128, 48, (1, 7), pads=[0, 3, 0, 3])])
    tall = b.node("Relu", [b.conv(wide, 48, 40, (7, 1), pads=[3, 0, 3, 0])])
    grouped = b.node("Relu", [b.conv(x, 128, 32, 3, group=16, strides=[2, 2], pads=[1, 1, 1, 1])])
    outs = [tall, grouped,
            b.conv(x, 128, 24, 3, group=4, dilations=[2, 2], pads=[2, 2, 2, 2]),
            b.conv(x, 128, 20, (3, 2), strides=[2, 1], pads=[1, 0, 0, 1], bias=False),
            b.node("Conv", [x, "w"], group=2, kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    path = b.save(str(tmp_path / "im2col.onnx"), [("x", [2, 16, 21, 23]), ("w", [8, 64, 3, 3])], outs)
    for threads in (1, 2):
        m = compare(path, batch=2, threads=threads)
    steps = m.describe()["steps"]
    assert sum(1 for s in steps if s.get("as") == "im2col") == 5
    assert sum(1 for s in steps if s.get("as") == "groups joined") == 2
    assert sum(1 for s in steps if s.get("op") == "Conv" and "as" not in s) == 1


def test_grouped_convs_of_few_channels_a_group_run_directly_in_nhwc(tmp_path):
    """ResNeXt's and RegNet's grouped 3x3 convs, 2, 4, 8 and 16 channels a group in and out,
    with the attributes exporters write (stride 2, dilation, per-axis strides and per-side pads,
    no bias), at a batch of 2 and widths that leave a part of a block of pixels and of a block of
    16 channels (24 and 56 outputs, RegNetX-200MF's): each runs as one NHWC step, its ReLU in the
    same pass where the ReLU alone reads it. Grouped convs of 8 outputs (under 16 lanes) and of
    8 channels in and 4 out keep im2col."""
    b = Builder()
    x = b.node("Relu", [b.conv("x", 16, 128, 1)])
    fused = [
        b.node("Relu", [b.conv(x, 128, 128, 3, group=32, strides=[2, 2], pads=[1, 1, 1, 1])]),
        b.node("Relu", [b.conv(b.conv(x, 128, 64, 1), 64, 64, 3, group=32, pads=[1, 1, 1, 1])]),
    ]
    shared = b.conv(x, 128, 128, 3, group=16, dilations=[2, 2], pads=[2, 2, 2, 2], bias=False)
    outs = fused + [
        b.node("Add", [b.node("Relu", [shared]), shared]),
        b.conv(x, 128, 128, (3, 2), group=16, strides=[2, 1], pads=[1, 0, 0, 1]),
        b.conv(b.conv(x, 128, 48, 1), 48, 48, 3, group=12, auto_pad="SAME_UPPER", strides=[2, 2]),
        b.conv(b.conv(x, 128, 24, 1), 24, 24, 3, group=6, pads=[1, 1, 1, 1]),
        b.node("Relu", [b.conv(b.conv(x, 128, 56, 1), 56, 56, 3, group=7, strides=[2, 2], pads=[1, 1, 1, 1])]),
        b.conv(x, 128, 128, 3, group=8, pads=[1, 1, 1, 1]),
        b.conv(b.conv(x, 128, 8, 1), 8, 8, 3, group=2, pads=[1, 1, 1, 1]),
        b.conv(x, 128, 64, 3, group=16, pads=[1, 1, 1, 1]),
    ]
    path = b.save(str(tmp_path / "grouped.onnx"), [("x", [2, 16, 21, 23])], outs)
    for threads in (1, 2):
        m = compare(path, batch=2, threads=threads)
    steps = [s.get("as") for s in m.describe()["steps"]]
    assert steps.count("grouped conv, relu") == 3
    assert steps.count("grouped conv") == 5
    assert steps.count("im2col") == 2


def test_lrn_in_both_orders_splits_over_threads(tmp_path):
    """GoogLeNet's LRN after a conv and its ReLU (size 5, beta 0.75) runs on the conv's NHWC
    output; a wider window (size 7) with another beta and bias too; an LRN of the graph's
    input runs in ONNX order. Large enough to split over two threads."""
    b = Builder()
    x = b.node("Relu", [b.conv("x", 12, 40, 3, pads=[1, 1, 1, 1])])
    outs = [b.node("LRN", [x], size=5, alpha=1e-4, beta=0.75, bias=1.0),
            b.node("LRN", [x], size=7, alpha=2e-3, beta=0.6, bias=2.0),
            b.node("LRN", ["x"], size=3, alpha=1e-2, beta=0.75, bias=1.5)]
    path = b.save(str(tmp_path / "lrn.onnx"), [("x", [1, 12, 33, 37])], outs)
    for threads in (1, 2):
        m = compare(path, threads=threads)
    layouts = sorted((s["to"], s["node"]) for s in m.describe()["steps"] if s["kind"] == "layout")
    assert layouts == sorted([("nhwc", "x"), ("nchw", outs[0]), ("nchw", outs[1])])


def test_forms_of_the_oldest_and_newest_opsets(tmp_path):
    # What libonnx 1.12's inference leaves open, the frontend gives: opset 1's Reshape with its
    # shape an attribute, a Squeeze with no axes, opset 18's Split into num_outputs parts (the
    # last one shorter); and before IR 4, initializers a graph does not list as inputs.
    def model(name, opset, nodes, inputs, outputs, inits=(), ir=8):
        b = Builder()
        b.nodes, b.inits = nodes, list(inits)
        path = b.save(str(tmp_path / (name + ".onnx")), inputs, outputs, opset=opset)
        m = onnx.load(path)
        m.ir_version = ir
        onnx.save(m, path)
        return path

    n = helper.make_node
    x = [("x", [2, 3, 5, 7])]
    w = numpy_helper.from_array(RNG.standard_normal((4, 7)).astype(np.float32), "w")
    c = numpy_helper.from_array(RNG.standard_normal(4).astype(np.float32), "c")
    compare(model("reshape1", 1, [n("Reshape", ["x"], ["y"], shape=[0, -1, 7])], x, ["y"]))
    compare(model("squeeze", 11, [n("Unsqueeze", ["x"], ["u"], axes=[1, 5]), n("Squeeze", ["u"], ["y"])], x, ["y"]))
    compare(model("split18", 18, [n("Split", ["x"], ["a", "b", "c"], axis=3, num_outputs=3)], x, ["a", "b", "c"]))
    compare(model("topk1", 1, [n("TopK", ["x"], ["v", "i"], k=3)], x, ["v"]))
    compare(model("gemm7_ir3", 7, [n("Gemm", ["x2", "w", "c"], ["y"], transB=1, alpha=0.5)], [("x2", [3, 7])], ["y"],
                  [w, c],
                  ir=3))


def test_matmuls_of_vectors_and_broadcast_batches(tmp_path):
    # numpy's matmul: a 1-D operand is a row or a column, dropped from the result; batch dims
    # broadcast, and a rank-3 weight may come first.
    b = Builder()
    v = b.node("ReduceMean", ["x"], axes=[0, 1, 2], keepdims=0)  # [7]
    outs = [b.node("MatMul", [v, b.const(RNG.standard_normal((7, 4)))]),
            b.node("MatMul", ["x", v]),
            b.node("MatMul", [b.const(RNG.standard_normal((3, 4, 5))), "x"]),
            b.node("MatMul", ["x", b.const(RNG.standard_normal((2, 1, 7, 6)))])]
    compare(b.save(str(tmp_path / "matmuls.onnx"), [("x", [1, 3, 5, 7])], outs))


def test_experimental_ops_of_opset_8_as_tiny_yolo_v2_holds_them(tmp_path):
    # Tiny YOLOv2 (opset 8) starts with an ImageScaler, its output read by a conv and here also
    # a graph output; Shrink is opset 9's.
    b = Builder()
    s = b.node("ImageScaler", ["x"], scale=0.5, bias=[1.0, -2.0, 3.0])
    y = b.node("LeakyRelu", [b.conv(s, 3, 4, 3, pads=[1, 1, 1, 1])], alpha=0.1)
    outs = [s, y, b.node("ScaledTanh", ["x"], alpha=1.5, beta=0.7), b.node("Affine", ["x"], alpha=2.0, beta=0.25), b.node("Affine", ["x"], alpha=2.0),
            b.node("ParametricSoftplus", ["x"], alpha=1.5, beta=2.0)]
    compare(b.save(str(tmp_path / "opset8.onnx"), [("x", [2, 3, 6, 8])], outs, opset=8))
    b = Builder()
    compare(b.save(str(tmp_path / "shrink.onnx"), [("x", [2, 3, 6, 8])],
                   [b.node("Shrink", ["x"], lambd=0.3, bias=0.1), b.node("Shrink", ["x"])], opset=9))


def test_gemms_no_kernel_takes_every_transpose_and_c(tmp_path):
    # Gemm and MatMul of two runtime operands run the plain packed product (packed_product.hpp):
    # every transA and transB, alpha and beta, C of each broadcast shape, sizes past one panel
    # of 64 columns and not a multiple of it, the rows split over the threads.
    b = Builder()
    outs = []
    for k, (ta, tb) in enumerate([(0, 0), (1, 0), (0, 1), (1, 1)]):
        a = b.node("Transpose", ["a"]) if ta else "a"  # [70, 33] read as [33, 70] when transposed
        w = b.node("Transpose", ["w"]) if not tb else "w"  # [150, 70] or [70, 150]
        c = [b.const(RNG.standard_normal(s)) for s in [(150,), (70, 1), (), (70, 150)]][k]
        outs.append(b.node("Gemm", [a, w, c], transA=ta, transB=tb, alpha=0.5 + k, beta=2.0 - k))
    outs.append(b.node("MatMul", ["a", b.node("Transpose", ["w"])]))
    compare(b.save(str(tmp_path / "gemms.onnx"), [("a", [70, 33]), ("w", [150, 33])], outs, opset=13))


def test_one_d_upsampling_as_vocoders_write_it_and_circular_pads(tmp_path):
    # A vocoder's 1-D transposed convs (stride, pads, output_padding, groups) and 1-D Resizes
    # (by scales, by sizes, opset 18's axes), one of a conv's output; opset 19's Pad "wrap"
    # (a circular padding, negative pads crop).
    b = Builder()
    w = lambda *s: b.const(RNG.standard_normal(s) * 0.3)
    up = b.node("ConvTranspose", ["a", w(6, 4, 16), w(4)], kernel_shape=[16], strides=[8], pads=[4, 4])
    up2 = b.node("ConvTranspose", ["a", w(6, 2, 3)], kernel_shape=[3], strides=[2], pads=[1, 1], output_padding=[1],
                 group=3)
    conv = b.node("Conv", ["a", w(8, 6, 3)], kernel_shape=[3], pads=[1, 1])
    near = b.node("Resize", [conv, "", b.const([1.0, 1.0, 2.0])], mode="nearest")
    lin = b.node("Resize", ["a", "", "", b.ints([2, 6, 45])], mode="linear", coordinate_transformation_mode="align_corners")
    axes = b.node("Resize", ["a", "", b.const([3.0])], mode="linear", axes=[2])
    after = b.node("Conv", [near, w(4, 8, 5)], kernel_shape=[5], pads=[2, 2])
    wrap3 = b.node("Pad", ["a", b.ints([0, 0, 3, 0, 0, -2])], mode="wrap")
    wrap4 = b.node("Pad", [b.node("Unsqueeze", ["a", b.ints([2])]), b.ints([0, 0, 0, 2, 0, 0, 1, 5])], mode="wrap")
    # Where one side crops and the other pads, the modes read what remains (ONNX Runtime's way).
    crops = [b.node("Pad", ["a", b.ints([0, 0, 2, 0, 0, -3])], mode="reflect"),
             b.node("Pad", ["a", b.ints([0, 0, -2, 0, 0, 3])], mode="edge")]
    compare(b.save(str(tmp_path / "audio.onnx"), [("a", [2, 6, 20])],
                   [up, up2, lin, axes, after, wrap3, wrap4] + crops, opset=19))


def test_three_d_convs_and_pools_as_video_and_medical_models_write_them(tmp_path):
    # r3d/x3d-style video blocks and a 3-D UNet's: Conv3d with per-side pads, strides and
    # dilations per axis, groups (depthwise), auto_pad, folded BN and ReLU; ConvTranspose3d with
    # output_padding and groups; MaxPool3d and AveragePool3d with ceil_mode, dilations and
    # count_include_pad; over a symbolic batch.
    b = Builder()

    def conv3d(x, cin, cout, k, group=1, bias=True, **attrs):
        w = b.const(RNG.standard_normal((cout, cin // group) + tuple(k)) * np.sqrt(2.0 / (cin // group * np.prod(k))))
        return b.node("Conv", [x, w] + ([b.const(RNG.uniform(-0.1, 0.1, cout))] if bias else []), group=group,
                      kernel_shape=list(k), **attrs)

    x = b.node("Relu", [b.bn(conv3d("x", 3, 8, (3, 7, 7), bias=False, strides=[1, 2, 2], pads=[1, 3, 3, 1, 3, 3]), 8)])
    outs = [conv3d(x, 8, 8, (3, 3, 3), pads=[1, 0, 1, 0, 1, 2], dilations=[1, 2, 1]),
            conv3d(x, 8, 8, (3, 3, 3), group=8, pads=[1, 1, 1, 1, 1, 1]),
            conv3d(x, 8, 4, (1, 3, 3), group=2, auto_pad="SAME_UPPER", strides=[1, 2, 2]),
            conv3d(x, 8, 70, (1, 1, 1)),  # 70 channels over the threads, 720 pixels in 12 panels
            b.node("Relu", [conv3d(x, 8, 4, (3, 3, 3), pads=[1] * 6)]),  # the ReLU in the conv's bias pass
            b.node("ConvTranspose", [x, b.const(RNG.standard_normal((8, 2, 2, 3, 3)) * 0.2), b.const([0.5] * 4)],
                   kernel_shape=[2, 3, 3],
                   strides=[2, 2, 2], pads=[0, 1, 1, 0, 1, 1], output_padding=[1, 1, 0], group=2),
            b.node("MaxPool", [x], kernel_shape=[1, 3, 3], strides=[1, 2, 2], pads=[0, 1, 1, 0, 1, 1]),
            b.node("MaxPool", [x], kernel_shape=[2, 2, 2], strides=[2, 2, 2], ceil_mode=1, dilations=[1, 1, 2]),
            b.node("AveragePool", [x], kernel_shape=[3, 3, 3], strides=[2, 2, 2], pads=[1, 0, 1, 0, 1, 2],
                   count_include_pad=1),
            b.node("AveragePool", [x], kernel_shape=[2, 3, 3], strides=[2, 2, 2], pads=[0, 1, 1, 1, 1, 0], ceil_mode=1),
            b.node("GlobalAveragePool", [x])]
    compare(b.save(str(tmp_path / "video.onnx"), [("x", ["N", 3, 5, 16, 18])], outs, opset=13), batch=2)
    b = Builder()  # 12800 output pixels, 432 deep: 200 panels shared by the threads
    compare(b.save(str(tmp_path / "blocks.onnx"), [("x", [1, 16, 8, 40, 40])],
                   [conv3d("x", 16, 6, (3, 3, 3), pads=[1, 1, 1, 1, 1, 1])], opset=13))


def test_three_d_convs_run_depth_by_depth_on_the_2d_kernels_with_their_residual_and_relu(tmp_path):
    # r3d-style residual blocks (conv, ReLU, conv, Add of the block's input, ReLU) and a 3-D UNet's
    # convs, each run as a 2-D kernel over [H, W, depth taps x C], depth by depth: depth strides,
    # per-side depth pads (one larger than the kernel's reach: a depth of padding only) and a depth
    # dilation, no bias, a batch of 2; the NDHWC results read by the next conv directly, and by a
    # concat, a pool, an elementwise op and the graph's outputs in ONNX order. Convs whose H and W
    # window no 2-D kernel takes (per-side pads, dilations, groups) run the plain N-D conv.
    b = Builder()

    def conv3d(x, cin, cout, k, bias=True, group=1, **attrs):
        w = b.const(RNG.standard_normal((cout, cin // group) + tuple(k)) * np.sqrt(2.0 / (cin * np.prod(k))))
        return b.node("Conv", [x, w] + ([b.const(RNG.uniform(-0.1, 0.1, cout))] if bias else []),
                      kernel_shape=list(k), group=group, **attrs)

    stem = b.node("Relu", [conv3d("x", 3, 16, (3, 7, 7), bias=False, strides=[1, 2, 2], pads=[1, 3, 3, 1, 3, 3])])
    inner = b.node("Relu", [conv3d(stem, 16, 16, (3, 3, 3), pads=[1] * 6)])
    block = b.node("Relu", [b.node("Add", [conv3d(inner, 16, 16, (3, 3, 3), pads=[1] * 6), stem])])
    down = conv3d(block, 16, 24, (3, 3, 3), strides=[2, 2, 2], pads=[2, 1, 1, 1, 1, 1], dilations=[2, 1, 1])
    # An Add whose other operand comes later (the conv waits for it), and one with a LeakyRelu
    # after it (the kernel's leaky_relu, alpha as every channel's slope).
    deep = b.node("Relu", [b.node("Add", [down, conv3d(block, 16, 24, (1, 1, 1), strides=[2, 2, 2])])])
    gate = b.node("LeakyRelu", [b.node("Add", [conv3d(deep, 24, 24, (1, 3, 3), pads=[0, 1, 1, 0, 1, 1]), deep])],
                  alpha=0.1)
    wide = conv3d(block, 16, 8, (2, 3, 3), pads=[0, 1, 1, 3, 1, 1])  # depth 4 + 3 pads -> 6 outputs
    plain = [conv3d(block, 16, 8, (3, 3, 3), pads=[1, 0, 1, 1, 1, 2]),
             conv3d(block, 16, 8, (3, 3, 3), pads=[1] * 6, dilations=[1, 2, 2]),
             conv3d(block, 16, 8, (3, 3, 3), pads=[1] * 6, group=2)]
    cat = b.node("Concat", [block, b.node("Relu", [conv3d(block, 16, 8, (3, 3, 3), pads=[1] * 6)])], axis=1)
    outs = [b.node("MaxPool", [gate], kernel_shape=[1, 2, 2], strides=[1, 2, 2]), wide,
            b.node("Sigmoid", [cat])] + plain
    path = b.save(str(tmp_path / "r3d.onnx"), [("x", ["N", 3, 4, 20, 24])], outs, opset=13)
    compare(path, batch=2)
    steps = rt.Model(path, batch=2).describe()["steps"]
    depth_wise = [s for s in steps if s.get("as") == "3-D conv, depth by depth"]
    assert [s["workload"].get("epilogue", []) for s in depth_wise] == [
        ["relu"], ["bias", "relu"], ["bias", "add", "relu"], ["bias"], ["bias"], ["bias", "relu"],
        ["bias", "add", "relu"], ["bias", "add", "leaky_relu"]]
    # The importer's tasks are the 2-D convs that run, once per output depth of each image.
    stem = atvoss.Graph.from_onnx(path, batch=2).nodes["n2_Conv"]
    assert stem.kernel.dims == depth_wise[0]["workload"]["dims"] and stem.count == 2 * 4
    assert depth_wise[0]["workload"]["dims"]["C"] == 3 * 3  # depth taps x channels
    assert sum(s["kind"] == "plain" and s.get("op") == "Conv" for s in steps) == 3
    # Between the stem and the block's end no layout changes: the convs pass NDHWC along.
    assert sum(s["kind"] == "layout" for s in steps[:6]) == 1


def function_model(path, functions, nodes, inputs, outputs, inits, opset=18, domains=("pkg.custom",)):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, T.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, T.FLOAT, None) for n in outputs],
                              [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    model = helper.make_model(graph, opset_imports=imports, functions=functions)
    model.ir_version = 10
    onnx.save(model, path)
    return path


def test_model_local_functions_run_as_the_nodes_they_are_made_of(tmp_path):
    # As torch's dynamo exporter and onnxscript write modules: a Linear + activation function
    # called twice (each call's tensors its own), a block function calling it (nested), an
    # attribute a call gives (alpha), one the function defaults (attribute_proto), one left to
    # the op's default; a call giving an optional input as the empty name (Clip's max); a
    # function of another domain; two overloads of one name.
    f, op = helper.make_function, helper.make_node
    one = [helper.make_opsetid("", 18)]

    def referring(node, name, to):  # node's attribute `name` refers to the function's `to`
        a = helper.make_attribute_ref(name, AttributeProto.FLOAT)
        a.ref_attr_name = to
        node.attribute.append(a)
        return node

    linear = f("pkg.custom", "Linear", ["x", "w", "b"], ["y", "pre"],
               [op("MatMul", ["x", "w"], ["t"]), op("Add", ["t", "b"], ["pre"]),
                referring(op("LeakyRelu", ["pre"], ["y"]), "alpha", "alpha")],
               one, attributes=["alpha"])
    clip = f("pkg.custom", "Clip01", ["x", "lo", "hi"], ["y"], [op("Clip", ["x", "lo", "hi"], ["y"])], one)
    scale = f("pkg.other", "Scale", ["x"], ["y"],
              [op("Constant", [], ["k"], value_float=2.0), op("Mul", ["x", "k"], ["y"])], one)
    block = f("pkg.custom", "Block", ["x", "w1", "b1", "w2", "b2"], ["y"],
              [op("Linear", ["x", "w1", "b1"], ["h", "h_pre"], domain="pkg.custom", alpha=0.3),
               referring(op("Linear", ["h", "w2", "b2"], ["z", "z_pre"], domain="pkg.custom"), "alpha", "slope"),
               op("Scale", ["z"], ["y"], domain="pkg.other")],
              one + [helper.make_opsetid("pkg.custom", 1), helper.make_opsetid("pkg.other", 1)], attributes=["slope"],
              attribute_protos=[helper.make_attribute("slope", 0.05)])
    w = {"w1": RNG.standard_normal((16, 16)) * 0.3, "b1": RNG.uniform(-1, 1, 16),
         "w2": RNG.standard_normal((16, 16)) * 0.3, "b2": RNG.uniform(-1, 1, 16), "lo": [-0.5]}
    nodes = [op("Block", ["x", "w1", "b1", "w2", "b2"], ["y1"], domain="pkg.custom", name="block"),
             op("Block", ["y1", "w1", "b1", "w2", "b2"], ["y2"], domain="pkg.custom", slope=0.2),
             op("Clip01", ["y2", "lo", ""], ["c"], domain="pkg.custom"),
             op("Linear", ["c", "w2", "b2"], ["l", "l_pre"], domain="pkg.custom")]  # alpha: LeakyRelu's 0.01
    path = function_model(str(tmp_path / "functions.onnx"), [linear, clip, scale, block], nodes,
                          [("x", ["batch", 16])], ["y1", "l"], w, domains=("pkg.custom", "pkg.other"))
    compare(path, batch=3)


def test_a_call_runs_the_overload_of_its_function_it_names(tmp_path):
    # IR 10's overloads: two functions of one name told apart by the call's overload (ONNX
    # Runtime 1.23 runs the last one for both calls, so against numpy).
    f, op = helper.make_function, helper.make_node
    one = [helper.make_opsetid("", 18)]
    heads = [f("pkg.custom", "Head", ["x"], ["y"], [op("Softmax", ["x"], ["y"], axis=-1)], one, overload="a"),
             f("pkg.custom", "Head", ["x"], ["y"], [op("Sigmoid", ["x"], ["y"])], one, overload="b")]
    nodes = [op("Head", ["x"], ["p"], domain="pkg.custom", overload="a"),
             op("Head", ["x"], ["q"], domain="pkg.custom", overload="b")]
    path = function_model(str(tmp_path / "overloads.onnx"), heads, nodes, [("x", [3, 16])], ["p", "q"], {})
    x = RNG.uniform(-2, 2, (3, 16)).astype(np.float32)
    p, q = rt.Model(path).run([x])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(p, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(q, 1 / (1 + np.exp(-x)), rtol=1e-5, atol=1e-7)


def test_a_function_that_calls_itself_or_of_another_opset_is_refused_by_name(tmp_path):
    f, op = helper.make_function, helper.make_node
    loop = f("pkg.custom", "Loop", ["x"], ["y"], [op("Loop", ["x"], ["y"], domain="pkg.custom")],
             [helper.make_opsetid("", 18), helper.make_opsetid("pkg.custom", 1)])
    path = function_model(str(tmp_path / "self.onnx"), [loop], [op("Loop", ["x"], ["y"], domain="pkg.custom")],
                          [("x", [2, 3])], ["y"], {})
    with pytest.raises(ValueError, match="function calls nest deeper than 32"):
        rt.Model(path)
    old = f("pkg.custom", "Id", ["x"], ["y"], [op("Identity", ["x"], ["y"])], [helper.make_opsetid("", 13)])
    path = function_model(str(tmp_path / "old.onnx"), [old], [op("Id", ["x"], ["y"], domain="pkg.custom")],
                          [("x", [2, 3])], ["y"], {})
    with pytest.raises(ValueError, match="function 'Id' is written for opset 13 of the default domain, "
                                         "the model for opset 18"):
        rt.Model(path)


def test_dilated_convs_run_as_phase_images_on_the_2d_kernel(tmp_path):
    # DeepLab's and FCN's dilated backbone convs (torch's padding=dilation): dilations 2, 3 and 4
    # on maps no dilation divides (phase images of unequal sizes, padded with zeros), a 5x5
    # window, with and without bias, a Relu and a residual block's Add in the kernel's epilogue,
    # one conv's output read by the next in NHWC, a batch of 2 (one kernel call over both
    # images' phases: the importer's task). Those whose phase images would be small (ASPP's dilation 12
    # on this map), or whose window is not centred, strided, dilated by axis or grouped run as
    # im2col and the matmul kernel.
    b = Builder()
    x = b.node("Relu", [b.conv("x", 8, 16, 3, dilations=[2, 2], pads=[2, 2, 2, 2])])
    x = b.conv(x, 16, 16, 3, bias=False, dilations=[4, 4], pads=[4, 4, 4, 4])
    y = b.node("Relu", [b.conv(x, 16, 8, 5, dilations=[3, 3], pads=[6, 6, 6, 6])])
    block = b.node("Relu", [b.node("Add", [b.conv(x, 16, 16, 3, dilations=[2, 2], pads=[2, 2, 2, 2]), x])])
    outs = [y, block,
            b.conv(x, 16, 8, 3, dilations=[12, 12], pads=[12, 12, 12, 12]),
            b.conv(x, 16, 8, 3, dilations=[2, 2], pads=[2, 1, 2, 3]),  # the same size, shifted
            b.conv(x, 16, 8, 3, dilations=[2, 2], pads=[2, 2, 2, 2], strides=[2, 2]),
            b.conv(x, 16, 8, 3, dilations=[2, 1], pads=[2, 1, 2, 1]),
            b.conv(x, 16, 8, 3, group=2, dilations=[2, 2], pads=[2, 2, 2, 2])]
    path = b.save(str(tmp_path / "dilated.onnx"), [("x", ["N", 8, 37, 42])], outs)
    compare(path, batch=2)
    steps = rt.Model(path, batch=2).describe()["steps"]
    phased = [s for s in steps if s.get("as") == "dilated conv as d x d phase images"]
    assert [(s["workload"]["dims"]["N"], s["workload"].get("epilogue", [])) for s in phased] == [
        (2 * 4, ["bias", "relu"]), (2 * 16, []), (2 * 9, ["bias", "relu"]), (2 * 4, ["bias", "add", "relu"])]
    assert phased[0]["workload"]["dims"]["H"] == 19 and phased[0]["workload"]["dims"]["W"] == 21


def test_aspp_rates_near_the_map_size_run_region_by_region(tmp_path):
    # DeepLabv3's ASPP (torchvision's rates 12, 24 and 36, padding = rate) on an output-stride-8
    # map of 29 x 31 (a 232 x 248 input), each with its ReLU, at a batch of 2; a strided dilated
    # conv of uneven pads, another of pads a pixel off centre and a 1-D dilated conv too; the head's bilinear upsample into
    # the model's output. Each conv whose taps read mostly padding runs as the im2col matmul of
    # each region's reading taps: every output pixel in one region, the rate-36 conv (no outer tap
    # reaches the map) one region of one tap; the importer's task is one of the matmuls that run.
    b = Builder()
    x = b.node("Relu", [b.conv("x", 8, 32, 1)])
    rates = [b.node("Relu", [b.conv(x, 32, 16, 3, dilations=[r, r], pads=[r] * 4)]) for r in (12, 24, 36)]
    head = b.conv(b.node("Concat", rates, axis=1), 48, 5, 1)
    up = b.node("Resize", [head, "", b.const([1, 1, 8, 8])], mode="linear")
    odd = [b.conv(x, 32, 8, 3, dilations=[6, 9], pads=[10, 4, 2, 13], strides=[2, 3]),
           b.conv(x, 32, 8, 3, dilations=[10, 10], pads=[9, 10, 11, 10])]
    line = b.node("Conv", [b.node("Reshape", [x, b.ints([2, 32, 29 * 31])]),
                           b.const(RNG.standard_normal((8, 32, 3)) * 0.2)], kernel_shape=[3], dilations=[500],
                  pads=[500, 500])
    path = b.save(str(tmp_path / "aspp.onnx"), [("x", [2, 8, 29, 31])], [up, line] + odd)
    for threads in (1, 2):
        m = compare(path, batch=2, threads=threads)
    steps = m.describe()["steps"]
    regions = [int(s["as"].split()[2]) for s in steps if s.get("as", "").startswith("im2col of")]
    assert regions == [9, 9, 1, 16, 12, 3], regions
    ran = [s["workload"] for s in steps if s["kind"] == "kernel" and s["workload"]["op"] == "matmul"]
    rate36 = [w for w in ran if w["dims"]["M"] == 2 * 29 * 31]  # the only region of its conv
    assert [w["dims"] for w in rate36] == [{"M": 2 * 29 * 31, "N": 16, "K": 32}], ran
    assert all(w["epilogue"] == ["bias", "relu"] for w in ran[:19]), ran
    fused = atvoss.graph.FusionScheduler.builtin(atvoss.Graph.from_onnx(path)).graph
    tasks = [n.kernel.to_json() for n in fused.nodes.values() if n.op == "Conv" and n.kernel]
    tasks = [dict(t, dtype="float32") for t in tasks if t["op"] == "matmul"]
    assert len(tasks) == 6 and all(t in ran for t in tasks), (tasks, ran)
    assert not [s for s in steps if s["kind"] == "layout" and s.get("to") == "nchw" and up in s["node"]], steps


def test_quantize_and_dequantize_linear_with_every_attribute(tmp_path):
    # QuantizeLinear and DequantizeLinear as quantization tools write them: uint8 and int8 zero
    # points, none (uint8), per tensor and per axis (axis 1, -1), values on rounding halves (to
    # even) and past the range (saturated), an int32 bias dequantized, and per channel of a conv's
    # NHWC output; uint8 and int8 outputs as well as float ones.
    b = Builder()
    x = b.node("Mul", ["x", b.const(4.0)])  # quarter steps of 0.5 scales: exact halves
    q8 = b.node("QuantizeLinear", [x, b.const(0.5), b.qint([128], T.UINT8, [])])
    qs8 = b.node("QuantizeLinear", [x, b.const(1.0), b.qint([-3], T.INT8, [])])  # halves of odd k / 2
    bare = b.node("QuantizeLinear", [x, b.const(0.02)])
    axis1 = b.node("QuantizeLinear", [x, b.const(RNG.uniform(0.01, 0.1, 6)), b.qint(RNG.integers(-5, 5, 6), T.INT8)],
                   axis=1)
    last = b.node("QuantizeLinear", [x, b.const(RNG.uniform(0.01, 0.1, 4)), b.qint([0, 3, 250, 7], T.UINT8)], axis=-1)
    conv = b.node("Relu", [b.conv("x", 6, 8, 3, pads=[1, 1, 1, 1])])
    per_channel = b.node("DequantizeLinear", [
        b.node("QuantizeLinear", [conv, b.const(RNG.uniform(0.005, 0.02, 8)), b.qint(RNG.integers(0, 9, 8), T.UINT8)],
               axis=1), b.const(RNG.uniform(0.005, 0.02, 8)), b.qint(RNG.integers(0, 9, 8), T.UINT8)], axis=1)
    bias = b.node("DequantizeLinear", [b.qint(RNG.integers(-70000, 70000, 8), T.INT32), b.const(1e-4)])
    outs = [(q8, T.UINT8), (qs8, T.INT8), (bare, T.UINT8), (axis1, T.INT8), (last, T.UINT8),
            (b.node("DequantizeLinear", [q8, b.const(0.5), b.qint([128], T.UINT8, [])]), T.FLOAT),
            (b.node("DequantizeLinear", [bare, b.const(0.02)]), T.FLOAT),
            (b.node("DequantizeLinear", [axis1, b.const(RNG.uniform(0.01, 0.1, 6)), b.qint(RNG.integers(-5, 5, 6),
                                                                                           T.INT8)], axis=1), T.FLOAT),
            (per_channel, T.FLOAT), (bias, T.FLOAT)]
    graph = helper.make_graph(b.nodes, "q", [helper.make_tensor_value_info("x", T.FLOAT, [2, 6, 5, 4])],
                              [helper.make_tensor_value_info(o, t, None) for o, t in outs], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "q.onnx"))
    feeds = {"x": (RNG.integers(-300, 300, (2, 6, 5, 4)) / 8).astype(np.float32)}
    m = rt.Model(str(tmp_path / "q.onnx"))
    ours = m.run([feeds["x"]])
    names = [n for n, _ in m.outputs]
    theirs = ort.InferenceSession(str(tmp_path / "q.onnx"), providers=["CPUExecutionProvider"]).run(names, feeds)
    assert sorted(names) == sorted(o for o, _ in outs)
    for name, a, r in zip(names, ours, theirs):
        assert a.shape == r.shape and a.dtype == r.dtype and np.array_equal(a, r), name


def quantize_qdq(src, path, shape, per_channel=True, activations="QUInt8"):
    """quantize_static's QDQ form of the model at src (one input "x" of shape shape), calibrated
    on 4 uniform batches in [-1, 1], written to path."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"x": RNG.uniform(-1, 1, shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.batches, None)

    quantize_static(src, path, Reader(), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=getattr(QuantType, activations), weight_type=QuantType.QInt8)


@pytest.mark.parametrize("activations, per_channel", [("QUInt8", True), ("QInt8", False)])
def test_a_qdq_model_as_onnxruntime_quantization_writes_it(tmp_path, activations, per_channel):
    # onnxruntime.quantization.quantize_static's QDQ format (its default): int8 weights per channel
    # and an int32 bias, each dequantized once at load (its constant subgraph) and then a conv's or
    # a Gemm's weights on the tuned kernels; uint8 activations quantized and dequantized between.
    # ONNX Runtime computes the fused int8 ops; the float ops the file writes agree with them here.
    # A QuantizeLinear read only by a DequantizeLinear of the same scale runs with it as one step.
    b = Builder()
    x = b.node("Relu", [b.conv("x", 3, 16, 3, pads=[1, 1, 1, 1])])
    x = b.node("Add", [x, b.node("Relu", [b.conv(x, 16, 16, 3, pads=[1, 1, 1, 1])])])
    x = b.node("Relu", [b.conv(x, 16, 32, 3, pads=[1, 1, 1, 1], strides=[2, 2])])
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])])
    out = b.node("Gemm", [x, b.const(RNG.standard_normal((32, 10)) * 0.2), b.const(RNG.uniform(-0.1, 0.1, 10))])
    b.save(str(tmp_path / "f32.onnx"), [("x", [1, 3, 24, 24])], [out])
    path = str(tmp_path / "qdq.onnx")
    # uint8 activations with int8 filters per channel (quantize_static's default), and int8
    # activations (u8 codes shifted by 128 for the kernels) with one filter scale per tensor.
    quantize_qdq(str(tmp_path / "f32.onnx"), path, (1, 3, 24, 24), per_channel, activations)
    m = compare(path)
    assert m.describe()["kernels"] == 4  # the three convs and the Gemm, on dequantized weights
    # The convs read their input's u8 codes and their int8 filters (VNNI; the Gemm stays fp32),
    # each requantizing its output onto the QuantizeLinear's grid that follows it.
    steps = m.describe()["steps"]
    int8 = [s["workload"] for s in steps if s.get("as") == "int8"]
    assert len(int8) == (3 if VNNI else 0) and all(w["dtype"] == "int8" and w["epilogue"][-1] == "requantize" for w in int8), int8
    # Each activation's QuantizeLinear and the DequantizeLinear that alone reads it: one pass,
    # and none after a conv. The residual Add and its sum's QuantizeLinear run in the epilogue of
    # the conv whose output it adds, after its own requantize, each onto its grid.
    ops = [s.get("op") for s in steps]
    assert ops.count("QuantizeLinear") == 4 and "DequantizeLinear" not in ops and "Add" not in ops, ops
    epilogues = [s["workload"]["epilogue"] for s in steps if s["kind"] == "kernel"]
    assert epilogues[1] == ["bias", "requantize", "add", "requantize"], epilogues
    # The first conv's output is read by the second conv (its codes) and by the residual Add in the
    # second's epilogue (its values): both written. The sum is read by the last conv alone: its
    # codes only. The last conv's output goes to a pool: values only.
    if VNNI:
        assert [(bool(s.get("codes_out")), bool(s.get("values_out")), bool(s.get("codes_in")))
                for s in steps if s["kind"] == "kernel"] == [
            (True, True, False), (True, False, True), (False, False, True), (False, False, False)], steps


def test_a_qdq_residual_add_and_relu_run_in_the_conv_that_feeds_them(tmp_path):
    # A residual block as quantization-aware exporters write it, the Relu kept between the Add and
    # its QuantizeLinear: the conv's epilogue requantizes onto its own grid, adds the residual (on
    # another grid), takes the ReLU and requantizes onto the sum's grid, whose codes the next conv
    # reads; that conv's Add of a broadcast constant stays a plain step. At a batch of two.
    b = Builder()

    def qdq(t, scale, zero):
        z = b.qint([zero], T.UINT8, [])
        return b.node("DequantizeLinear", [b.node("QuantizeLinear", [t, b.const(scale), z]), b.const(scale), z])

    def qconv(t, cin, cout, k, **attrs):
        w = b.node("DequantizeLinear", [b.qint(RNG.integers(-60, 60, (cout, cin, k, k)), T.INT8), b.const(0.004)])
        return b.node("Conv", [t, w, b.const(RNG.uniform(-0.1, 0.1, cout))], kernel_shape=[k, k], **attrs)

    x = qdq("x", 0.01, 128)
    y = qdq(qconv(x, 16, 16, 3, pads=[1, 1, 1, 1]), 0.02, 120)
    total = qdq(b.node("Relu", [b.node("Add", [y, x])]), 0.015, 64)  # the ReLU clips codes below 64
    z = qdq(qconv(total, 16, 24, 1), 0.02, 128)
    out = b.node("Add", [z, b.const(RNG.uniform(-0.1, 0.1, (1, 24, 1, 1)))])
    path = b.save(str(tmp_path / "res.onnx"), [("x", ["N", 16, 8, 8])], [out])
    m = rt.Model(path, batch=2)
    x = RNG.uniform(-1, 1, (2, 16, 8, 8)).astype(np.float32)
    (ours,) = m.run([x])
    # The file's float ops exactly; ONNX Runtime's fused int8 kernels round a few ties the other way.
    for level, within in ((ort.GraphOptimizationLevel.ORT_DISABLE_ALL, 1e-4), (ort.GraphOptimizationLevel.ORT_ENABLE_ALL, 0.0201)):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        (theirs,) = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]).run(None, {"x": x})
        assert float(np.max(np.abs(ours - theirs))) <= within, level
    steps = m.describe()["steps"]
    kernels = [s for s in steps if s["kind"] == "kernel"]
    assert [s["workload"]["epilogue"] for s in kernels] == [["bias", "requantize", "add", "relu", "requantize"],
                                                             ["bias", "requantize"]], kernels
    assert [s.get("op") for s in steps].count("Add") == 1, steps
    if VNNI:
        assert [(bool(s.get("codes_out")), bool(s.get("codes_in"))) for s in kernels] == [(True, False),
                                                                                       (False, True)], kernels


def test_a_qdq_pointwise_conv_runs_on_the_int8_matmul_where_the_cpu_has_amx(tmp_path):
    # A 1x1 conv of stride 1 and no padding is a product of its pixels' rows: on a CPU with AMX
    # the int8 matmul (its weights packed once at load, a ragged 12 x 12 pixels and 40 channels
    # out), elsewhere the 1x1 int8 conv; one of fewer than 64 channels in (a tile row) stays a
    # conv; one of stride 2 takes the codes of every second pixel (6 x 6 rows) to the matmul. All
    # requantize. The first writes its output's u8 codes, which the 3x3 conv reads as they are
    # (its sole reader, an int8 kernel on the same grid); the 3x3 conv's values go to a depthwise
    # conv (fp32), which writes its codes for the next 1x1 conv; the strided reader gathers its
    # own codes from the values.
    b = Builder()
    x = b.node("Relu", [b.conv("x", 64, 40, 1)])
    x = b.node("Relu", [b.conv(x, 40, 40, 3, pads=[1, 1, 1, 1])])
    x = b.node("Relu", [b.conv(x, 40, 40, 3, group=40, pads=[1, 1, 1, 1])])
    x = b.node("Relu", [b.conv(x, 40, 64, 1)])
    out = b.node("Relu", [b.conv(x, 64, 24, 1, strides=[2, 2])])
    b.save(str(tmp_path / "f32.onnx"), [("x", [1, 64, 12, 12])], [out])
    path = str(tmp_path / "qdq.onnx")
    quantize_qdq(str(tmp_path / "f32.onnx"), path, (1, 64, 12, 12))
    m = compare(path)
    kernels = [s for s in m.describe()["steps"] if s["kind"] == "kernel"]
    steps = [s for s in kernels if s.get("as") == "int8"]
    int8 = [s["workload"] for s in steps]
    if not VNNI:
        assert int8 == []
        return
    tiles = "matmul" if AMX else "conv2d"
    assert [w["op"] for w in int8] == [tiles, "conv2d", "conv2d", tiles], int8
    if AMX:
        assert [int8[0]["dims"], int8[3]["dims"]] == [{"M": 144, "K": 64, "N": 40}, {"M": 36, "K": 64, "N": 24}], int8
    assert all(w["epilogue"][-1] == "requantize" for w in int8), int8
    assert [(s["workload"]["op"], bool(s.get("codes_in")), bool(s.get("codes_out"))) for s in kernels] == [
        (tiles, False, True), ("conv2d", True, False), ("depthwise_conv2d", False, True), ("conv2d", True, False),
        (tiles, False, False)], kernels


def test_quantized_operators_run_as_their_float_ops(tmp_path):
    # The operator form of int8 models (QuantFormat.QOperator, the ONNX model zoo's int8 models):
    # QLinearConv (per-channel weights, an int32 bias, strides, pads, groups), QLinearMatMul
    # (per-column weights), MatMulInteger and ConvInteger (int32 out, zero points per tensor and
    # per column), and ONNX Runtime's com.microsoft QLinearAdd, QLinearMul, QLinearAveragePool,
    # QLinearGlobalAveragePool, QLinearSigmoid, QLinearLeakyRelu, QLinearConcat and QGemm (a
    # quantized and a float output). Each runs as its float op between DequantizeLinear and
    # QuantizeLinear, its constant weights dequantized once at load; a conv and a MatMul on the
    # tuned kernels.
    b = Builder()
    u8, s8, i32 = T.UINT8, T.INT8, T.INT32
    xs, xz = b.const(0.02), b.qint([120], u8, [])

    def qconv(x, cin, cout, k, group=1, **attrs):
        w = b.qint(RNG.integers(-100, 100, (cout, cin // group, k, k)), s8)
        ws = b.const(RNG.uniform(0.002, 0.01, cout))
        bias = b.qint(RNG.integers(-2000, 2000, cout), i32)
        return b.node("QLinearConv", [x, xs, xz, w, ws, b.qint(np.zeros(cout), s8), xs, xz, bias], group=group,
                      kernel_shape=[k, k], **attrs)

    def ms(op, inputs, **attrs):
        b.count += 1
        out = "%s_%d" % (op.lower(), b.count)
        b.nodes.append(helper.make_node(op, inputs, [out], name="n%d_%s" % (b.count, op), domain="com.microsoft",
                                        **attrs))
        return out

    x = b.node("QuantizeLinear", ["x", xs, xz])
    c1 = qconv(x, 8, 16, 3, pads=[1, 1, 1, 1])
    c2 = qconv(c1, 16, 16, 3, group=4, strides=[2, 2], pads=[0, 1, 1, 0])
    added = ms("QLinearAdd", [c1, xs, xz, qconv(c1, 16, 16, 1), xs, xz, b.const(0.03), xz])
    product = ms("QLinearMul", [added, b.const(0.03), xz, c1, xs, xz, b.const(0.05), xz])
    pooled = ms("QLinearAveragePool", [product, b.const(0.05), xz, xs, xz], kernel_shape=[3, 3], strides=[2, 2],
                pads=[1, 1, 1, 1], count_include_pad=0)
    both = ms("QLinearConcat", [xs, xz, pooled, xs, xz, c2, xs, xz], axis=1)
    act = ms("QLinearLeakyRelu", [ms("QLinearSigmoid", [both, xs, xz, b.const(0.004), b.qint([0], u8, [])]),
                                  b.const(0.004), b.qint([0], u8, []), xs, xz], alpha=0.1)
    flat = b.node("Flatten", [ms("QLinearGlobalAveragePool", [act, xs, xz, xs, xz], channels_last=0)])
    w = b.qint(RNG.integers(0, 255, (32, 12)), u8)
    mm = b.node("QLinearMatMul", [flat, xs, xz, w, b.const(RNG.uniform(0.001, 0.01, 12)),
                                  b.qint(RNG.integers(100, 150, 12), u8), b.const(0.05), xz])
    gemm_w = b.qint(RNG.integers(-100, 100, (10, 12)), s8)
    gemm_args = [mm, b.const(0.05), xz, gemm_w, b.const(0.01), b.qint([0], s8, []), b.qint(RNG.integers(-99, 99, 10), i32)]
    q_out = ms("QGemm", gemm_args + [b.const(0.1), xz], transB=1, alpha=0.5)
    f_out = ms("QGemm", gemm_args, transB=1)
    integer = b.node("MatMulInteger", [mm, b.qint(RNG.integers(-9, 9, (12, 5)), s8), xz,
                                       b.qint(RNG.integers(-2, 2, 5), s8)])
    conv_integer = b.node("ConvInteger", [x, b.qint(RNG.integers(0, 255, (4, 8, 3, 3)), u8), xz,
                                          b.qint([128], u8, [])], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    outs = [(b.node("DequantizeLinear", [q_out, b.const(0.1), xz]), T.FLOAT), (f_out, T.FLOAT),
            (integer, i32), (conv_integer, i32), (b.node("DequantizeLinear", [c2, xs, xz]), T.FLOAT)]
    graph = helper.make_graph(b.nodes, "qop", [helper.make_tensor_value_info("x", T.FLOAT, [1, 8, 12, 12])],
                              [helper.make_tensor_value_info(o, t, None) for o, t in outs], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    path = str(tmp_path / "qop.onnx")
    onnx.save(model, path)
    m = compare(path)
    assert m.describe()["kernels"] >= 6  # QLinearConv x 3, QLinearMatMul, MatMulInteger, ConvInteger
    # The QLinearConvs of one group on int8 kernels (their filters kept as codes) and MatMulInteger
    # (its weights less their zero points fit int8); the grouped conv, ConvInteger (no scales) and
    # QLinearMatMul (uint8 weights less zero points of 100 to 150 do not fit) on fp32.
    assert sum(s.get("as") == "int8" for s in m.describe()["steps"]) == (3 if VNNI else 0)
    # A QuantizeLinear whose readers all dequantize it alike (one per QLinear op reading it) runs
    # once as the round trip, the others reading its output; the DequantizeLinears left are those
    # of other scales (the Integer ops' zero points, the float outputs).
    assert [s.get("op") for s in m.describe()["steps"]].count("DequantizeLinear") == 6


def test_a_truncated_int8_filter_is_refused_by_name(tmp_path):
    # A QLinearConv whose int8 filter holds fewer bytes than its shape: refused at load, naming the
    # constant, not read past its end (its codes now reach the int8 kernel as they are).
    b = Builder()
    u8, s8 = T.UINT8, T.INT8
    xs, xz = b.const(0.02), b.qint([120], u8, [])
    w = b.qint(RNG.integers(-100, 100, (4, 3, 3, 3)), s8)
    b.inits[-1].raw_data = b.inits[-1].raw_data[:50]
    x = b.node("QuantizeLinear", ["x", xs, xz])
    y = b.node("QLinearConv", [x, xs, xz, w, b.const(RNG.uniform(0.002, 0.01, 4)), b.qint(np.zeros(4), s8), xs, xz],
               kernel_shape=[3, 3])
    out = b.node("DequantizeLinear", [y, xs, xz])
    path = b.save(str(tmp_path / "truncated.onnx"), [("x", [1, 3, 8, 8])], [out])
    with pytest.raises(ValueError, match="constant '%s' holds 50 bytes, its shape 108" % w):
        rt.Model(path)


def test_dynamic_quantize_linear_finds_the_range_on_two_threads(tmp_path):
    # DynamicQuantizeLinear of an input large enough that two threads each find the range of
    # half of it: the scale, zero point and codes are ONNX Runtime's. (After float ops the
    # engine computes to another last bit, such as a GELU's, a value on a half step may round
    # to the next code, so whole quantized models are compared on small inputs.)
    b = Builder()
    b.nodes.append(helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zero"]))
    graph = helper.make_graph(b.nodes, "dql", [helper.make_tensor_value_info("x", T.FLOAT, [160, 7, 32])],
                              [helper.make_tensor_value_info("y", T.UINT8, None),
                               helper.make_tensor_value_info("scale", T.FLOAT, None),
                               helper.make_tensor_value_info("zero", T.UINT8, None)], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = str(tmp_path / "dql.onnx")
    onnx.save(model, path)
    compare(path)


def test_a_dynamically_quantized_transformer_layer(tmp_path):
    # onnxruntime.quantization.quantize_dynamic's form (BERT and GPT-2 int8 on CPUs): each MatMul
    # of a constant as DynamicQuantizeLinear of its input (scale and zero point from the values
    # at run time), MatMulInteger against int8 weights, then Cast and a Mul by the two scales;
    # inputs all positive, all negative and all zero as well (the range widened to hold 0; an
    # all-zero input's scale 1).
    from onnxruntime.quantization import QuantType, quantize_dynamic

    b = Builder()
    h = b.node("MatMul", ["x", b.const(RNG.standard_normal((32, 64)) * 0.2)])
    h = b.erf_gelu(b.node("Add", [h, b.const(RNG.uniform(-0.1, 0.1, 64))]))
    out = b.node("Add", [b.node("MatMul", [h, b.const(RNG.standard_normal((64, 32)) * 0.2)]), "x"])
    b.save(str(tmp_path / "f32.onnx"), [("x", ["batch", 7, 32])], [out])
    path = str(tmp_path / "dyn.onnx")
    quantize_dynamic(str(tmp_path / "f32.onnx"), path, weight_type=QuantType.QInt8)
    assert "DynamicQuantizeLinear" in {n.op_type for n in onnx.load(path).graph.node}
    m = compare(path, batch=3)
    assert m.describe()["kernels"] == 2

    def int8_ops(model):
        return [s["workload"]["op"] for s in model.describe()["steps"] if s.get("as") == "int8"]

    # Both MatMulIntegers on int8 kernels: the codes DynamicQuantizeLinear computed, its zero
    # point read when the step runs. The second's 64 inputs fill an AMX tile row and its 21 rows
    # a tile's 16: the int8 matmul there; the first's 32 inputs do not; nor do 14 rows.
    assert int8_ops(m) == (["conv2d", "matmul" if AMX else "conv2d"] if VNNI else [])
    assert int8_ops(rt.Model(path, batch=2, threads=2)) == (["conv2d", "conv2d"] if VNNI else [])
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for x in (np.abs(RNG.standard_normal((3, 7, 32))), -np.abs(RNG.standard_normal((3, 7, 32))), np.zeros((3, 7, 32))):
        x = x.astype(np.float32)
        ours, theirs = m.run([x])[0], session.run(None, {"x": x})[0]
        assert float(np.max(np.abs(ours - theirs) / np.maximum(np.abs(theirs), 1))) <= 1e-4


def test_outputs_come_in_the_order_the_graph_declares_them(tmp_path):
    # As ONNX Runtime returns them (DynamicQuantizeLinear written out declares y before the scale
    # its nodes compute first): by the graph's output list, not by the order nodes write them.
    b = Builder()
    first = b.node("Relu", ["x"])
    second = b.node("Neg", [first])
    path = b.save(str(tmp_path / "order.onnx"), [("x", [2, 3])], [second, "x", first])
    m = compare(path)
    assert [n for n, _ in m.outputs] == [second, "x", first]
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == [n for n, _ in m.outputs]


def test_three_d_resizes_as_a_3d_unet_upsamples(tmp_path):
    # A 3-D UNet's decoder: trilinear and nearest upsampling of [N, C, D, H, W] by scales or
    # sizes, in each coordinate mode, and a downsampling.
    b = Builder()
    outs = [b.node("Resize", ["x", "", b.const([1, 1, 2, 2, 2])], mode="linear"),
            b.node("Resize", ["x", "", b.const([1, 1, 2, 1.5, 3])], mode="nearest"),
            b.node("Resize", ["x", "", "", b.ints([2, 3, 7, 9, 4])], mode="linear",
                   coordinate_transformation_mode="align_corners"),
            b.node("Resize", ["x", "", "", b.ints([2, 3, 6, 11, 13])], mode="nearest",
                   coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
            b.node("Resize", ["x", "", b.const([1, 1, 0.5, 0.6, 0.5])], mode="linear",
                   coordinate_transformation_mode="pytorch_half_pixel")]
    compare(b.save(str(tmp_path / "resize3d.onnx"), [("x", [2, 3, 4, 5, 6])], outs, opset=13))


def test_casts_to_narrow_integer_types_truncate_and_wrap(tmp_path):
    # A super-resolution model's uint8 image out (Clip, Cast), int8 and int16 of scaled floats
    # (truncated toward zero), and integers past a narrow type's range wrapped as ONNX Runtime
    # wraps them; each output in its own type.
    b = Builder()
    scaled = b.node("Mul", ["x", b.const(100.7)])
    image = b.node("Cast", [b.node("Clip", [b.node("Mul", ["x", b.const(300.0)]), b.const(0.0), b.const(255.0)])],
                   to=T.UINT8)
    outs = [image, b.node("Cast", [scaled], to=T.INT8), b.node("Cast", [scaled], to=T.INT16),
            b.node("Cast", ["ids"], to=T.INT8), b.node("Cast", ["ids"], to=T.UINT8), b.node("Cast", ["ids"], to=T.UINT16),
            b.node("Cast", [b.node("Cast", ["ids"], to=T.UINT8)], to=T.FLOAT),
            b.node("Cast", [b.node("Cast", ["ids"], to=T.INT8)], to=T.FLOAT)]  # as the graph holds it
    types = [T.UINT8, T.INT8, T.INT16, T.INT8, T.UINT8, T.UINT16, T.FLOAT, T.FLOAT]
    graph = helper.make_graph(b.nodes, "casts", [helper.make_tensor_value_info("x", T.FLOAT, [2, 5]),
                                                 helper.make_tensor_value_info("ids", T.INT64, [2, 5])],
                              [helper.make_tensor_value_info(o, t, None) for o, t in zip(outs, types)], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = str(tmp_path / "casts.onnx")
    onnx.save(model, path)
    run_both(path, {"x": RNG.uniform(-1, 1, (2, 5)).astype(np.float32),
                    "ids": np.array([[0, 127, 128, 255, 256], [-1, -128, -129, 300, 70000]], np.int64)})


def test_lp_pools_of_every_rank(tmp_path):
    # LpPool (p of 1, 2, 3; pads, strides) and GlobalLpPool, of 1-D, 2-D and 3-D inputs; opset
    # 18's dilations refused by name (Debian's libonnx infers the output's shape without them).
    for shape, k in (([2, 3, 11], [3]), ([2, 3, 9, 7], [2, 3]), ([1, 2, 5, 6, 7], [2, 2, 3])):
        b = Builder()
        rank = len(k)
        outs = [b.node("LpPool", ["x"], kernel_shape=k, p=2, strides=[2] * rank),
                b.node("LpPool", ["x"], kernel_shape=k, p=1, pads=[1] * rank + [0] * rank),
                b.node("LpPool", ["x"], kernel_shape=k, p=3, strides=[1] * rank),
                b.node("GlobalLpPool", ["x"], p=1), b.node("GlobalLpPool", ["x"])]
        compare(b.save(str(tmp_path / ("lp%d.onnx" % rank)), [("x", shape)], outs, opset=18))
    b = Builder()
    path = b.save(str(tmp_path / "dilated.onnx"), [("x", [1, 2, 9, 9])],
                  [b.node("LpPool", ["x"], kernel_shape=[2, 2], dilations=[2, 2])], opset=18)
    with pytest.raises(ValueError, match="LpPool.*dilations other than 1"):
        rt.Model(path)
