"""atvoss.quantization and the runtime's int8 / bf16 kernels from Python: codes made from float32
arrays run the int8 matmul and conv2d exactly as integer arithmetic says (numpy in int64), bf16
within bf16's rounding; the sensitivity analysis measures each layer and its plans stay within
their thresholds; wrong dtypes and shapes are TypeError / ValueError naming the argument. On a
CPU without AVX-512 VNNI / BF16 the kernel tests are skipped, saying which flag is missing."""
import numpy as np
import pytest

import atvoss
from atvoss import quantization as q

RT = atvoss.runtime.runtime()


def has_flag(flag):
    with open("/proc/cpuinfo") as f:
        return flag in f.read().split()


needs_vnni = pytest.mark.skipif(not has_flag("avx512_vnni"), reason="this CPU has no avx512_vnni")
needs_bf16 = pytest.mark.skipif(not has_flag("avx512_bf16"), reason="this CPU has no avx512_bf16")


def normal(shape, seed, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def test_calibration_and_codes_follow_their_definitions():
    x = np.concatenate([normal(10000, 1), np.float32([40.0])])
    lo, hi = q.calibrate(x)
    assert lo == pytest.approx(float(x.min())) and hi == 40.0
    plo, phi = q.calibrate(x, "percentile", percentile=99.0)
    assert phi < 5 and plo > -5  # the outlier is clipped
    code = q.AffineCode.of(-1.0, 3.0)
    assert code.scale == pytest.approx(4 / 255) and code.zero_point == 64
    codes = q.quantize_activations(np.float32([-5, 0, 1, 100]), code)
    assert codes.dtype == np.uint8 and list(codes) == [0, 64, 64 + round(1 / code.scale), 255]
    with pytest.raises(ValueError, match="method"):
        q.calibrate(x, "median")
    bits = q.to_bf16(np.float32([1 + 1 / 256, 1 + 3 / 256, -2.5]))
    assert bits.dtype == np.uint16
    back = (bits.astype(np.uint32) << 16).view(np.float32)
    assert list(back) == [1.0, 1 + 4 / 256, -2.5]  # nearest, ties to even


def test_weights_are_coded_per_output_channel():
    w = normal((3, 3, 5, 8), 2)
    ops = q.quantize_int8(w, (-1.0, 1.0))
    assert ops.weights.dtype == np.int8 and ops.weights.shape == w.shape
    per_column = np.abs(w.reshape(-1, 8)).max(axis=0) / 127
    np.testing.assert_allclose(ops.scale, per_column * ops.code.scale, rtol=1e-6)
    np.testing.assert_array_equal(np.abs(ops.weights.reshape(-1, 8)).max(axis=0), 127)
    np.testing.assert_array_equal(ops.comp, ops.weights.reshape(-1, 8).astype(np.int64).sum(0) * ops.code.zero_point)


def int8_reference(qa, qw, ops):
    acc = qa.astype(np.int64) @ qw.astype(np.int64) - ops.comp.astype(np.int64)
    return ops.scale * acc.astype(np.int32).astype(np.float32)


@needs_vnni
def test_int8_matmul_is_the_integer_arithmetic():
    a, w = normal((37, 70), 3), normal((70, 40), 4, 0.1)
    ops = q.quantize_int8(w, q.calibrate(a))
    qa = q.quantize_activations(a, ops.code)
    c = RT.matmul_int8(qa, ops.weights, ops.scale, ops.comp)
    np.testing.assert_array_equal(c, int8_reference(qa, ops.weights, ops))
    # and it is close to the float32 product it stands for
    assert np.abs(c - a @ w).max() < 0.05 * np.abs(a @ w).max()
    with pytest.raises(TypeError, match="'a' must have dtype uint8"):
        RT.matmul_int8(a, ops.weights, ops.scale, ops.comp)
    with pytest.raises(ValueError, match="'comp' must have shape \\(40,\\)"):
        RT.matmul_int8(qa, ops.weights, ops.scale, ops.comp[:-1])


@needs_vnni
def test_two_int8_layers_chain_through_u8_codes():
    """The first layer requantizes onto the second's input code and hands it u8 codes, which
    the second reads as its input: no float32 tensor between them."""
    a, w1, w2 = normal((37, 70), 11), normal((70, 40), 12, 0.1), normal((40, 24), 13, 0.1)
    ops1 = q.quantize_int8(w1, q.calibrate(a))
    qa = q.quantize_activations(a, ops1.code)
    hidden = RT.matmul_int8(qa, ops1.weights, ops1.scale, ops1.comp)
    ops2 = q.quantize_int8(w2, q.calibrate(hidden))
    grid = (ops2.code.scale, ops2.code.zero_point)
    values = RT.matmul_int8(qa, ops1.weights, ops1.scale, ops1.comp, ["requantize"], qout=grid)
    codes = RT.matmul_int8(qa, ops1.weights, ops1.scale, ops1.comp, ["requantize"], qout=grid, codes=True)
    assert codes.dtype == np.uint8 and codes.shape == (37, 40)
    np.testing.assert_array_equal(codes, np.rint(values / grid[0] + grid[1]).astype(np.uint8))
    assert len(np.unique(codes)) > 20
    out = RT.matmul_int8(codes, ops2.weights, ops2.scale, ops2.comp)
    np.testing.assert_array_equal(out, int8_reference(codes, ops2.weights, ops2))
    want = a @ w1 @ w2
    assert np.abs(out - want).max() < 0.1 * np.abs(want).max()
    with pytest.raises(ValueError, match="'qout' given but the epilogue has no 'quantize' or 'requantize'"):
        RT.matmul_int8(qa, ops1.weights, ops1.scale, ops1.comp, ["relu"], qout=grid)
    with pytest.raises(ValueError, match="'codes'"):
        RT.matmul_int8(qa, ops1.weights, ops1.scale, ops1.comp, codes=True)


@needs_bf16
def test_a_bf16_conv2d_hands_u8_codes_to_an_int8_layer():
    x, f = normal((1, 6, 7, 9), 14), normal((3, 3, 9, 16), 15, 0.2)
    grid = (1 / 16, 128)
    values = RT.conv2d_bf16(q.to_bf16(x), q.to_bf16(f), pad=1, epilogue=["quantize"], qout=grid)
    codes = RT.conv2d_bf16(q.to_bf16(x), q.to_bf16(f), pad=1, epilogue=["quantize"], qout=grid, codes=True)
    assert codes.dtype == np.uint8 and codes.shape == (1, 6, 7, 16)
    np.testing.assert_array_equal(codes, np.rint(values / grid[0] + grid[1]).astype(np.uint8))
    assert len(np.unique(codes)) > 20


@needs_vnni
def test_int8_conv2d_pads_with_the_zero_point():
    x, f = normal((1, 6, 7, 9), 5), normal((3, 3, 9, 16), 6, 0.2)
    ops = q.quantize_int8(f, q.calibrate(x))
    qx = q.quantize_activations(x, ops.code)
    out = RT.conv2d_int8(qx, ops.code.zero_point, ops.weights, ops.scale, ops.comp, stride=1, pad=1,
                         epilogue=["relu"])
    padded = np.pad(qx, ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=ops.code.zero_point)
    cols = np.stack([padded[:, r:r + 6, s:s + 7, :] for r in range(3) for s in range(3)], axis=3)
    want = np.maximum(int8_reference(cols.reshape(42, -1), ops.weights.reshape(-1, 16), ops), 0)
    np.testing.assert_array_equal(out.reshape(42, 16), want)
    with pytest.raises(ValueError, match="zero_point"):
        RT.conv2d_int8(qx, 300, ops.weights, ops.scale, ops.comp, pad=1)


@needs_bf16
def test_bf16_kernels_compute_the_rounded_product():
    a, w = normal((9, 33), 7), normal((33, 31), 8)
    ab, wb = q.to_bf16(a), q.to_bf16(w)
    as_f32 = lambda bits: (bits.astype(np.uint32) << 16).view(np.float32)  # noqa: E731
    c = RT.matmul_bf16(ab, wb)
    want = as_f32(ab).astype(np.float64) @ as_f32(wb).astype(np.float64)
    assert np.abs(c - want).max() <= 1e-4 * max(1.0, np.abs(want).max())
    x, f = normal((1, 5, 5, 4), 9), normal((3, 3, 4, 8), 10)
    out = RT.conv2d_bf16(q.to_bf16(x), q.to_bf16(f), pad=1)
    assert out.shape == (1, 5, 5, 8)
    ref = RT.conv2d(as_f32(q.to_bf16(x)), as_f32(q.to_bf16(f)), pad=1)
    assert np.abs(out - ref).max() <= 1e-4 * max(1.0, np.abs(ref).max())
    with pytest.raises(TypeError, match="'b' must have dtype uint16"):
        RT.matmul_bf16(ab, w)


@needs_vnni
@needs_bf16
def test_sensitivity_plans_keep_the_chain_within_each_threshold():
    mlp = [("fc1", {"op": "matmul", "dtype": "float32", "dims": {"M": 16, "N": 64, "K": 96},
                    "epilogue": ["bias", "relu"]}),
           ("fc2", {"op": "matmul", "dtype": "float32", "dims": {"M": 16, "N": 32, "K": 64},
                    "epilogue": ["bias", "relu"]}),
           ("fc3", {"op": "matmul", "dtype": "float32", "dims": {"M": 16, "N": 10, "K": 32}, "epilogue": ["bias"]})]
    s = q.Sensitivity(mlp, seed=3, timed_calls=1, calibration_rows=32)
    layers = s.layers
    assert [l.name for l in layers] == ["fc1", "fc2", "fc3"] and [l.chained for l in layers] == [False, True, True]
    assert all(0 < l.bf16_error < l.int8_error for l in layers)
    errors = []
    for threshold in (1e-4, 1e-2, 1.0):
        plan = s.plan(threshold)
        assert plan.chained and plan.measured_error <= threshold
        errors.append(plan.measured_error)
        assert set(plan.precision) == {"fc1", "fc2", "fc3"}
    assert errors[0] == 0  # all float32
    assert [l.dtype for l in s.plan(1.0).layers] == ["int8"] * 3
    with pytest.raises(ValueError, match="threshold"):
        s.plan(-1.0)
