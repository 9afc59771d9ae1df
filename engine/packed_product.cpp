#include "engine/packed_product.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/vector_build.hpp"

namespace atvoss::engine {
namespace {

using namespace loops;

// Tiles of MR rows x a panel's 64 columns held in registers while p runs down the panel's
// contiguous rows; the last, narrower panel's columns one at a time.
template <int MR>
ATVOSS_INLINE void product_tile(const float* x, std::int64_t ldx, std::int64_t k, const float* panel, const float* bias,
                                float* out, std::int64_t ldo) {
  constexpr int NV = int(kPanel / 16);
  Vec16 acc[MR][NV];  // every loop over them unrolled, so that they stay in registers
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    Vec16 b;
    if (bias) std::memcpy(&b, bias + 16 * v, sizeof b);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      if (!bias) std::memcpy(&b, out + i * ldo + 16 * v, sizeof b);
      acc[i][v] = b;
    }
  }
  for (std::int64_t p = 0; p < k; ++p) {
    Vec16 wv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) std::memcpy(&wv[v], panel + p * kPanel + 16 * v, sizeof wv[v]);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const float a = x[i * ldx + p];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] += a * wv[v];
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) std::memcpy(out + i * ldo, acc[i], sizeof acc[i]);
}

ATVOSS_INLINE void product_body(const float* x, std::int64_t rows, std::int64_t ldx, std::int64_t k, const float* b,
                                std::int64_t n, const float* bias, float* out, std::int64_t ldo) {
  constexpr std::int64_t MR = 4;
  std::int64_t j0 = 0;
  for (; j0 + kPanel <= n; j0 += kPanel) {
    const float* panel = b + j0 * k;
    std::int64_t r = 0;
    const float* from = bias ? bias + j0 : nullptr;
    for (; r + MR <= rows; r += MR) product_tile<MR>(x + r * ldx, ldx, k, panel, from, out + r * ldo + j0, ldo);
    for (; r < rows; ++r) product_tile<1>(x + r * ldx, ldx, k, panel, from, out + r * ldo + j0, ldo);
  }
  const std::int64_t rest = n - j0;
  if (rest == 0) return;
  // The last, narrower panel widened to 64 columns with zeros, its tiles computed into a
  // 64-wide scratch and the columns that exist copied out: vector tiles, not one column at a time.
  thread_local std::vector<float> wide_panel, wide_out, wide_bias;
  wide_panel.assign(std::size_t(k * kPanel), 0.0f);
  for (std::int64_t p = 0; p < k; ++p) std::copy_n(b + j0 * k + p * rest, rest, wide_panel.data() + p * kPanel);
  wide_out.assign(std::size_t(rows * kPanel), 0.0f);
  if (bias) {
    wide_bias.assign(std::size_t(kPanel), 0.0f);
    std::copy_n(bias + j0, rest, wide_bias.data());
  } else {
    for (std::int64_t r = 0; r < rows; ++r) std::copy_n(out + r * ldo + j0, rest, wide_out.data() + r * kPanel);
  }
  const float* from = bias ? wide_bias.data() : nullptr;
  std::int64_t r = 0;
  for (; r + MR <= rows; r += MR)
    product_tile<MR>(x + r * ldx, ldx, k, wide_panel.data(), from, &wide_out[std::size_t(r * kPanel)], kPanel);
  for (; r < rows; ++r)
    product_tile<1>(x + r * ldx, ldx, k, wide_panel.data(), from, &wide_out[std::size_t(r * kPanel)], kPanel);
  for (r = 0; r < rows; ++r) std::copy_n(wide_out.data() + r * kPanel, rest, out + r * ldo + j0);
}
ATVOSS_BUILT_TWICE(product,
                   (const float* x, std::int64_t rows, std::int64_t ldx, std::int64_t k, const float* b, std::int64_t n,
                    const float* bias, float* out, std::int64_t ldo),
                   (x, rows, ldx, k, b, n, bias, out, ldo))

}  // namespace

void packed_product(const float* x, std::int64_t rows, std::int64_t ldx, std::int64_t k, const float* b, std::int64_t n,
                    const float* bias, float* out, std::int64_t ldo) {
  product_here()(x, rows, ldx, k, b, n, bias, out, ldo);
}

}  // namespace atvoss::engine
