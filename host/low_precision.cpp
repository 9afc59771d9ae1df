#include "host/low_precision.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace atvoss::host {

std::uint16_t to_bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::uint16_t(u >> 16);
}

float from_bf16(std::uint16_t b) {
  const std::uint32_t u = std::uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

std::uint8_t AffineU8::quantize(float x) const {
  const long q = std::lround(x / scale) + zero_point;
  return std::uint8_t(std::clamp(q, 0L, 255L));
}

AffineU8 affine_u8(float lo, float hi) {
  AffineU8 p;
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  p.scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
  p.zero_point = int(std::clamp(std::lround(-lo / p.scale), 0L, 255L));
  return p;
}

Int8Weights quantize_weights_int8(std::span<const float> b, std::int64_t batches, std::int64_t rows,
                                  std::int64_t cols) {
  if (batches < 1 || rows < 1 || cols < 1 || b.size() != std::size_t(batches * rows * cols)) {
    throw_bad_input("quantize: 'b' holds " + std::to_string(b.size()) + " values, expected " + std::to_string(batches) +
                    " x " + std::to_string(rows) + " x " + std::to_string(cols));
  }
  const std::size_t n = std::size_t(cols), kn = std::size_t(rows * cols);
  Int8Weights w;
  w.scale.assign(n, 0.0f);
  for (std::size_t i = 0; i < b.size(); ++i) w.scale[i % n] = std::max(w.scale[i % n], std::abs(b[i]));
  for (float& x : w.scale) x = x > 0 ? x / 127.0f : 1.0f;
  w.q.resize(b.size());
  w.column_sum.assign(std::size_t(batches) * n, 0);
  for (std::size_t i = 0; i < b.size(); ++i) {
    const std::size_t j = i % n;
    const long q = std::clamp(std::lround(b[i] / w.scale[j]), -127L, 127L);
    w.q[i] = std::int8_t(q);
    w.column_sum[i / kn * n + j] += std::int32_t(q);
  }
  return w;
}

namespace {

void quantize_int8(const MatmulShape& s, float a_lo, float a_hi, Operands& o) {
  const AffineU8 pa = affine_u8(a_lo, a_hi);
  o.qzero = pa.zero_point;
  o.qa.resize(o.a.size());
  for (std::size_t i = 0; i < o.a.size(); ++i) {
    o.qa[i] = pa.quantize(o.a[i]);
    o.a[i] = pa.value(o.qa[i]);
  }
  const Int8Weights wq = quantize_weights_int8(o.b, s.batch, s.k, s.n);
  const std::size_t n = std::size_t(s.n);
  o.qb.resize(o.b.size());
  for (std::size_t i = 0; i < o.b.size(); ++i) {
    o.qb[i] = std::uint8_t(wq.q[i]);
    o.b[i] = wq.scale[i % n] * float(wq.q[i]);
  }
  o.qcomp.resize(wq.column_sum.size());
  for (std::size_t i = 0; i < o.qcomp.size(); ++i) o.qcomp[i] = pa.zero_point * wq.column_sum[i];
  o.qscale.resize(n);
  for (std::size_t j = 0; j < n; ++j) o.qscale[j] = pa.scale * wq.scale[j];
}

void round_bf16(std::vector<float>& values, std::vector<std::uint8_t>& bits) {
  bits.resize(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t h = to_bf16(values[i]);
    std::memcpy(bits.data() + 2 * i, &h, 2);
    values[i] = from_bf16(h);
  }
}

}  // namespace

MatmulShape conv_gemm_shape(const Workload& w) {
  return {1, w.dim("N") * w.out_h() * w.out_w(), w.dim("K"), w.dim("R") * w.dim("S") * w.dim("C")};
}

void quantize_operands(const Workload& w, float a_lo, float a_hi, Operands& o) {
  if (w.dtype() == DType::int8) {
    quantize_int8(w.is_conv() ? conv_gemm_shape(w) : matmul_shape(w), a_lo, a_hi, o);
  } else {
    round_bf16(o.a, o.qa);
    round_bf16(o.b, o.qb);
  }
}

std::int64_t int8_accumulator(const MatmulShape& s, const Operands& o, std::int64_t b, std::int64_t i, std::int64_t j) {
  std::int64_t acc = 0;
  const std::uint8_t* A = o.qa.data() + b * s.m * s.k + i * s.k;
  const std::uint8_t* B = o.qb.data() + b * s.k * s.n + j;
  for (std::int64_t k = 0; k < s.k; ++k) acc += std::int64_t(A[k]) * std::int64_t(std::int8_t(B[k * s.n]));
  return acc - o.qcomp[std::size_t(b * s.n + j)];
}

}  // namespace atvoss::host
