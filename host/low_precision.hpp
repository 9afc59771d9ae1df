// Low precision: the int8 and bf16 forms of a matmul's fp32 operands as the host kernels read
// them (kernel_abi.hpp), and the conversions they use.
//   int8: A asymmetric u8 per tensor over its range [lo, hi] (scale (hi - lo) / 255, zero
//         point round(-lo / scale)), B symmetric s8 per output column (scale max|B[:, j]| /
//         127 over every batch), saturating; qscale[j] = scale_A * scale_B[j], qcomp[b, j] =
//         zero point * sum_k qB[b, k, j] (oneDNN calls this the compensation).
//   bf16: both inputs rounded to nearest even.
// After quantisation a and b hold the values the low-precision data represent, so the fp32
// reference (operands.hpp) checks the kernel's arithmetic, not the quantisation error.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/workload.hpp"
#include "host/operands.hpp"

namespace atvoss::host {

std::uint16_t to_bf16(float x);  // round to nearest even (finite x)
float from_bf16(std::uint16_t b);

// Per-tensor affine u8 parameters of the range [lo, hi] (which must hold 0).
struct AffineU8 {
  float scale = 1;
  int zero_point = 0;
  std::uint8_t quantize(float x) const;
  float value(std::uint8_t q) const { return scale * float(int(q) - zero_point); }
};
AffineU8 affine_u8(float lo, float hi);

// Symmetric s8 codes of weights, per output column: b holds `batches` row-major rows x cols
// matrices (a matmul's B[K, N]; a conv2d's HWIO weights are the (R*S*C) x K one); scale[j] =
// max |b[., ., j]| / 127 over every batch (1 for an all-zero column), so nothing is clipped;
// column_sum[batch * cols + j] = the sum of column j's codes in that batch (times A's zero
// point, the compensation). bad_input naming 'b' when its size is not batches x rows x cols.
struct Int8Weights {
  std::vector<std::int8_t> q;
  std::vector<float> scale;
  std::vector<std::int32_t> column_sum;
};
Int8Weights quantize_weights_int8(std::span<const float> b, std::int64_t batches, std::int64_t rows, std::int64_t cols);

// REQUIRES: w is a matmul, batch_matmul or conv2d of dtype int8 or bfloat16, o from
// make_operands with A drawn from [a_lo, a_hi]. Fills qa, qb (and for int8 qscale, qcomp,
// qzero) and rewrites a, b. A conv2d is its implicit GEMM: B is the (R*S*C) x K weights.
void quantize_operands(const Workload& w, float a_lo, float a_hi, Operands& o);

// The implicit GEMM of a conv2d: pixels x (R*S*C) x K, one batch (the weights are shared).
MatmulShape conv_gemm_shape(const Workload& w);

// The exact s32 result of an int8 matmul, C[b, i, j] = sum_k qa * qb - qcomp[b, j], for tests
// that compare a kernel bit for bit: C = qscale[j] * float(that).
std::int64_t int8_accumulator(const MatmulShape& s, const Operands& o, std::int64_t b, std::int64_t i, std::int64_t j);

}  // namespace atvoss::host
