#include "engine/packed_product.hpp"

#include <cstring>

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
    std::memcpy(&b, bias + 16 * v, sizeof b);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) acc[i][v] = b;
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
    for (; r + MR <= rows; r += MR) product_tile<MR>(x + r * ldx, ldx, k, panel, bias + j0, out + r * ldo + j0, ldo);
    for (; r < rows; ++r) product_tile<1>(x + r * ldx, ldx, k, panel, bias + j0, out + r * ldo + j0, ldo);
  }
  const std::int64_t rest = n - j0;
  const float* panel = b + j0 * k;
  for (std::int64_t r = 0; rest > 0 && r < rows; ++r) {
    for (std::int64_t j = 0; j < rest; ++j) {
      float acc = bias[j0 + j];
      for (std::int64_t p = 0; p < k; ++p) acc += x[r * ldx + p] * panel[p * rest + j];
      out[r * ldo + j0 + j] = acc;
    }
  }
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
