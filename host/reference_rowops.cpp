#include "host/reference_rowops.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace atvoss::host {
namespace {

void softmax_row(const float* x, std::size_t n, std::vector<double>& out) {
  double mx = x[0];
  for (std::size_t j = 0; j < n; ++j) mx = std::max(mx, double(x[j]));
  double sum = 0;
  for (std::size_t j = 0; j < n; ++j) sum += (out[j] = std::exp(double(x[j]) - mx));
  for (std::size_t j = 0; j < n; ++j) out[j] /= sum;
}

void layernorm_row(const float* x, std::size_t n, const Operands& o, std::vector<double>& out) {
  double mean = 0, var = 0;
  for (std::size_t j = 0; j < n; ++j) mean += x[j];
  mean /= double(n);
  for (std::size_t j = 0; j < n; ++j) var += (x[j] - mean) * (x[j] - mean);
  const double rstd = 1.0 / std::sqrt(var / double(n) + kLayernormEpsilon);
  for (std::size_t j = 0; j < n; ++j) out[j] = (x[j] - mean) * rstd * o.scale[j] + o.shift[j];
}

void reference_row(const Workload& w, const Operands& o, std::size_t i, std::size_t n, std::vector<double>& out) {
  const float* x = o.a.data() + i * n;
  if (w.op() == "softmax") return softmax_row(x, n, out);
  if (w.op() == "layernorm") return layernorm_row(x, n, o, out);
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t at = i * n + j;
    const double v = w.op() == "elementwise" ? double(x[j]) + double(o.b[at]) : double(x[j]);
    out[j] = apply_epilogue(w, o, v, j, at);
  }
}

}  // namespace

OperandSizes row_operand_sizes(const Workload& w) {
  OperandSizes s;
  const auto m = std::size_t(w.dim("M")), n = std::size_t(w.dim("N"));
  s.a = s.c = m * n;
  s.b = w.op() == "elementwise" ? m * n : 0;
  s.per_column = n;
  s.affine = w.op() == "layernorm";
  if (w.op() == "softmax") s.a_lo = -8, s.a_hi = 8;
  if (w.op() == "layernorm") s.a_lo = 2, s.a_hi = 4;
  return s;
}

double row_max_relative_error(const Workload& w, const Operands& o) {
  const auto m = std::size_t(w.dim("M")), n = std::size_t(w.dim("N"));
  std::vector<double> ref(n);
  double worst = 0;
  for (std::size_t i = 0; i < m; ++i) {
    reference_row(w, o, i, n, ref);
    for (std::size_t j = 0; j < n; ++j) {
      const double got = o.c[i * n + j];
      if (!std::isfinite(got)) return INFINITY;
      worst = std::max(worst, std::abs(got - ref[j]) / std::max(std::abs(ref[j]), 1.0));
    }
  }
  return worst;
}

}  // namespace atvoss::host
