// The plain ops (plain_ops.hpp) by family: elementwise_ops.cpp, pool_ops.cpp, norm_ops.cpp,
// layout_ops.cpp; here what belongs to none of them.
#include "engine/plain_ops.hpp"

#include "engine/internal/plain_helpers.hpp"
#include "engine/packed_product.hpp"
#include "engine/vector_build.hpp"

namespace atvoss::engine {

std::int64_t elements(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

void gemm(const float* a, const float* b, const float* c, const Shape& cs, float* y, std::int64_t m, std::int64_t n,
          std::int64_t k, bool trans_a, bool trans_b, float alpha, float beta, int threads) {
  // Kept between calls: a run allocates nothing once warm.
  thread_local std::vector<float> packed, rows, zeros;
  packed.resize(std::size_t(k * n));
  float* to = packed.data();
  loops::split(
      (n + kPanel - 1) / kPanel, 1, k * n >= loops::kGrain ? threads : 1, [&](std::int64_t q0, std::int64_t q1) {
        for (std::int64_t j0 = q0 * kPanel; j0 < std::min(n, q1 * kPanel); j0 += kPanel) {
          auto at = [&](std::int64_t p, std::int64_t j) { return trans_b ? b[(j0 + j) * k + p] : b[p * n + j0 + j]; };
          pack_panels(k, std::min(kPanel, n - j0), at, to + j0 * k);  // one panel
        }
      });
  const float* x = a;
  if (trans_a) {
    rows.resize(std::size_t(m * k));
    for (std::int64_t p = 0; p < k; ++p) {
      for (std::int64_t i = 0; i < m; ++i) rows[std::size_t(i * k + p)] = a[p * m + i];
    }
    x = rows.data();
  }
  zeros.assign(std::size_t(n), 0.0f);
  const float *bp = packed.data(), *zp = zeros.data();
  const auto cst = plain::broadcast_strides(cs, 2);
  loops::split(m, loops::rows_grain(n * k / 16), threads, [&](std::int64_t r0, std::int64_t r1) {
    packed_product(x + r0 * k, r1 - r0, k, k, bp, n, zp, y + r0 * n, n);
    if (alpha == 1.0f && !c) return;
    for (std::int64_t i = r0; i < r1; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        y[i * n + j] = alpha * y[i * n + j] + (c ? beta * c[i * cst[0] + j * cst[1]] : 0.0f);
      }
    }
  });
}

void batched_gemm(std::int64_t count, std::int64_t m, std::int64_t n, std::int64_t k, int threads,
                  const GemmOperands& operands) {
  const bool share = count >= threads;
  auto some = [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      const auto [a, b, y] = operands(i);
      gemm(a, b, nullptr, {}, y, m, n, k, false, false, 1.0f, 0.0f, share ? 1 : threads);
    }
  };
  if (share) return loops::split(count, 1, threads, some);
  some(0, count);
}

void matmul(const float* a, const Shape& as, const float* b, const Shape& bs, float* y, int threads) {
  const Shape a2 = as.size() == 1 ? Shape{1, as[0]} : as, b2 = bs.size() == 1 ? Shape{bs[0], 1} : bs;
  const std::int64_t m = a2[a2.size() - 2], k = a2.back(), n = b2.back();
  const Shape a_batch(a2.begin(), a2.end() - 2), b_batch(b2.begin(), b2.end() - 2);
  const std::size_t rank = std::max(a_batch.size(), b_batch.size());
  Shape batch(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t x = i + a_batch.size() >= rank ? a_batch[i + a_batch.size() - rank] : 1;
    const std::int64_t z = i + b_batch.size() >= rank ? b_batch[i + b_batch.size() - rank] : 1;
    batch[i] = std::max(x, z);
  }
  // Strides in whole matrices, 0 along a broadcast dim.
  const auto sa = plain::broadcast_strides(a_batch, rank), sb = plain::broadcast_strides(b_batch, rank);
  batched_gemm(elements(batch), m, n, k, threads, [&](std::int64_t i) {
    std::int64_t at_a = 0, at_b = 0;
    for (std::size_t d = rank, rest = std::size_t(i); d-- > 0; rest /= std::size_t(batch[d])) {
      const auto index = std::int64_t(rest % std::size_t(batch[d]));
      at_a += index * sa[d], at_b += index * sb[d];
    }
    return std::tuple<const float*, const float*, float*>(a + at_a * m * k, b + at_b * k * n, y + i * m * n);
  });
}

}  // namespace atvoss::engine
