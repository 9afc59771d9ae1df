#include "host/operands.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "core/error.hpp"
#include "host/low_precision.hpp"
#include "host/reference_conv.hpp"
#include "host/reference_rowops.hpp"
#include "host/rowops_space.hpp"

namespace atvoss::host {

MatmulShape matmul_shape(const Workload& w) {
  if (!w.is_matmul_like()) throw_bad_input("host: op '" + w.op() + "' is not a matmul");
  MatmulShape s{1, w.dim("M"), w.dim("N"), w.dim("K")};
  if (w.op() == "batch_matmul") s.batch = w.dim("B");
  return s;
}

AtvossArgs Operands::args() {
  auto ptr = [](std::vector<float>& v) { return v.empty() ? nullptr : v.data(); };
  auto bytes = [](std::vector<std::uint8_t>& v) { return v.empty() ? nullptr : static_cast<const void*>(v.data()); };
  return AtvossArgs{ptr(a),
                    ptr(b),
                    ptr(c),
                    ptr(bias),
                    ptr(scale),
                    ptr(shift),
                    ptr(residual),
                    bytes(qa),
                    bytes(qb),
                    qscale.empty() ? nullptr : qscale.data(),
                    qcomp.empty() ? nullptr : qcomp.data(),
                    ptr(qout),
                    qzero,
                    nullptr,
                    nullptr,
                    ptr(slope),
                    0,
                    0};
}

namespace {

OperandSizes matmul_sizes(const Workload& w) {
  const MatmulShape s = matmul_shape(w);
  OperandSizes o;
  o.a = std::size_t(s.batch * s.m * s.k);
  o.b = std::size_t(s.batch * s.k * s.n);
  o.c = std::size_t(s.batch * s.m * s.n);
  o.per_column = std::size_t(s.n);
  return o;
}

}  // namespace

Operands make_operands(const Workload& w, std::uint64_t seed) {
  if (w.is_conv()) return make_conv_operands(w, seed);
  const OperandSizes s = is_row_op(w) ? row_operand_sizes(w) : matmul_sizes(w);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> input(s.a_lo, s.a_hi), unit(-1.0f, 1.0f), positive(0.5f, 1.5f);
  auto fill = [&](std::size_t n, auto& dist) {
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
  };
  Operands o;
  o.a = fill(s.a, input);
  o.b = fill(s.b, unit);
  o.c.assign(s.c, 0.0f);
  if (w.has_epilogue("bias")) o.bias = fill(s.per_column, unit);
  if (w.has_epilogue("batchnorm") || s.affine) {
    o.scale = fill(s.per_column, positive);
    o.shift = fill(s.per_column, unit);
  }
  if (w.has_epilogue("add")) o.residual = fill(s.c, unit);
  if (w.has_epilogue("leaky_relu")) o.slope = fill(s.per_column, unit);
  // A grid of 1/16 over [-8, 8): coarse enough that rounding shows in every output.
  o.qout = output_grid(w);
  if (w.dtype() != DType::float32 && w.is_matmul_like()) quantize_operands(w, s.a_lo, s.a_hi, o);
  return o;
}

double gelu_reference(double x) {
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}

namespace {

std::vector<std::int64_t> rows_to_check(const MatmulShape& s, std::uint64_t seed) {
  std::vector<std::int64_t> rows;
  if (double(s.m) * double(s.n) * double(s.k) <= double(1 << 26)) {
    for (std::int64_t i = 0; i < s.m; ++i) rows.push_back(i);
    return rows;
  }
  std::set<std::int64_t> picked;
  for (std::int64_t i = 0; i < std::min<std::int64_t>(8, s.m); ++i) {
    picked.insert(i);
    picked.insert(s.m - 1 - i);
  }
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::uniform_int_distribution<std::int64_t> any(0, s.m - 1);
  for (int i = 0; i < 32; ++i) picked.insert(any(rng));
  return {picked.begin(), picked.end()};
}

}  // namespace

double apply_epilogue(const Workload& w, const Operands& o, double v, std::size_t col, std::size_t at) {
  std::size_t grid = 0;  // the quantize ops' pairs in qout, in order
  for (const auto& op : w.epilogue()) {
    if (op == "bias") v += o.bias[col];
    if (op == "batchnorm") v = v * o.scale[col] + o.shift[col];
    if (op == "relu") v = std::max(v, 0.0);
    if (op == "relu6") v = std::clamp(v, 0.0, 6.0);
    if (op == "gelu") v = gelu_reference(v);
    if (op == "gelu_erf") v = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    if (op == "sigmoid") v = 1.0 / (1.0 + std::exp(-v));
    if (op == "silu") v = v / (1.0 + std::exp(-v));
    if (op == "leaky_relu") v = v < 0 ? v * o.slope[col] : v;
    if (op == "tanh") v = std::tanh(v);
    if (op == "hardswish") v = v * std::clamp(v / 6 + 0.5, 0.0, 1.0);
    if (op == "hardsigmoid") v = std::clamp(v / 6 + 0.5, 0.0, 1.0);
    if (op == "mish") v = v * std::tanh(std::log1p(std::exp(v)));
    if (op == "add") v += o.residual[at];
    if (op == "quantize" || op == "requantize") {
      const std::span<const float> g = std::span(o.qout).subspan(grid, 2);
      v = (double(u8_code(v, g)) - g[1]) * g[0];
      grid += 2;
    }
  }
  return v;
}

std::vector<float> output_grid(const Workload& w) {
  std::vector<float> grids;  // each a step coarser and a zero point lower than the one before
  for (int i = 0; i < w.quantize_grids(); ++i) grids.insert(grids.end(), {float(i + 1) / 16, 128.0f - float(8 * i)});
  return grids;
}

std::vector<float> last_grid(const std::vector<float>& qout) {
  return qout.size() < 2 ? qout : std::vector<float>(qout.end() - 2, qout.end());
}

double grid_steps(const std::vector<float>& qout) {
  double sum = 0;
  for (std::size_t i = 0; i < qout.size(); i += 2) sum += qout[i];
  return sum;
}

std::uint8_t u8_code(double value, std::span<const float> qout) {
  return std::uint8_t(std::floor(std::clamp(value / qout[0] + qout[1], 0.0, 255.0) + 0.5));
}

std::size_t wrong_codes(const std::vector<float>& values, const std::uint8_t* codes, const std::vector<float>& qout) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < values.size(); ++i) wrong += codes[i] != u8_code(values[i], qout);
  return wrong;
}

double max_relative_error(const Workload& w, const Operands& o, std::uint64_t seed) {
  if (w.is_conv()) return conv_max_relative_error(w, o, seed);
  if (is_row_op(w)) return row_max_relative_error(w, o);
  const MatmulShape s = matmul_shape(w);
  const auto rows = rows_to_check(s, seed);
  const double forgiven = grid_steps(o.qout);
  double worst = 0;
  std::vector<double> acc(std::size_t(s.n));
  for (std::int64_t b = 0; b < s.batch; ++b) {
    const float* A = o.a.data() + b * s.m * s.k;
    const float* B = o.b.data() + b * s.k * s.n;
    for (std::int64_t i : rows) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (std::int64_t k = 0; k < s.k; ++k) {
        const double aik = A[i * s.k + k];
        const float* brow = B + k * s.n;
        for (std::int64_t j = 0; j < s.n; ++j) acc[j] += aik * brow[j];
      }
      for (std::int64_t j = 0; j < s.n; ++j) {
        const std::size_t at = std::size_t((b * s.m + i) * s.n + j);
        const double ref = apply_epilogue(w, o, acc[j], std::size_t(j), at);
        const double got = o.c[at];
        if (!std::isfinite(got)) return INFINITY;
        worst = std::max(worst, std::max(0.0, std::abs(got - ref) - forgiven) / std::max(std::abs(ref), 1.0));
      }
    }
  }
  return worst;
}

}  // namespace atvoss::host
