// The engine's plain matrix product: B [k][n] packed once into panels of 64 columns (each
// panel's k rows contiguous), then out = x B + bias row by row, tiles of a few rows by a panel
// held in registers while the reduction runs down the panel. The recurrent ops (rnn.hpp) pack
// their weights so at load; the plain Gemm and MatMul steps and Einsum (plain_ops.hpp gemm)
// pack their B on each call. Pure functions: thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>

namespace atvoss::engine {

inline constexpr std::int64_t kPanel = 64;  // columns of a packed panel

// B [k][n] with B[p][j] = at(p, j), packed into out (k n floats) as packed_product reads it:
// panels of 64 columns, each its k rows one after another, and the last panel as wide as what
// is left.
template <class At>
void pack_panels(std::int64_t k, std::int64_t n, At at, float* out) {
  for (std::int64_t j0 = 0; j0 < n; j0 += kPanel) {
    const std::int64_t width = std::min(kPanel, n - j0);
    for (std::int64_t p = 0; p < k; ++p) {
      for (std::int64_t j = 0; j < width; ++j) *out++ = at(p, j0 + j);
    }
  }
}

// out[r * ldo + j] = bias[j] + sum over p < k of x[r * ldx + p] * B[p][j], for r < rows and
// j < n, B packed by pack_panels into b; accumulated in float, in p's order. bias null: the sum
// is added to what out holds (a reduction run in blocks of p).
void packed_product(const float* x, std::int64_t rows, std::int64_t ldx, std::int64_t k, const float* b, std::int64_t n,
                    const float* bias, float* out, std::int64_t ldo);

}  // namespace atvoss::engine
