// The plain ops (plain_ops.hpp) by family: elementwise_ops.cpp, pool_ops.cpp, norm_ops.cpp,
// layout_ops.cpp; here what belongs to none of them.
#include "engine/plain_ops.hpp"

#include "engine/internal/plain_helpers.hpp"

namespace atvoss::engine {

std::int64_t elements(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

void gemm(const float* a, const float* b, const float* c, const Shape& cs, float* y, std::int64_t m, std::int64_t n,
          std::int64_t k, bool trans_a, bool trans_b, float alpha, float beta) {
  const auto cst = plain::broadcast_strides(cs, 2);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        acc += double(trans_a ? a[p * m + i] : a[i * k + p]) * (trans_b ? b[j * k + p] : b[p * n + j]);
      }
      y[i * n + j] = float(alpha * acc + (c ? beta * c[i * cst[0] + j * cst[1]] : 0.0));
    }
  }
}

}  // namespace atvoss::engine
