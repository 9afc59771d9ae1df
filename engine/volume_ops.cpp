#include "engine/volume_ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/packed_product.hpp"
#include "engine/vector_build.hpp"

namespace atvoss::engine {
namespace {

// The spatial offsets of every kernel tap, tap-major: taps x rank values, the last dim fastest.
std::vector<std::int64_t> taps_of(const std::vector<std::int64_t>& kernel) {
  std::vector<std::int64_t> taps, at(kernel.size(), 0);
  const std::int64_t count = elements(kernel);
  for (std::int64_t t = 0; t < count; ++t) {
    taps.insert(taps.end(), at.begin(), at.end());
    for (std::size_t d = kernel.size(); d-- > 0;) {
      if (++at[d] < kernel[d]) break;
      at[d] = 0;
    }
  }
  return taps;
}

// Each pixel's window origin (its index x stride - pad) over the spatial dims of shape s,
// pixel-major: pixels x rank values.
std::vector<std::int64_t> origins_of(const Shape& s, const WindowNd& a) {
  const std::size_t rank = s.size() - 2;
  const Shape out(s.begin() + 2, s.end());
  std::vector<std::int64_t> origins, at(rank, 0);
  const std::int64_t count = elements(out);
  for (std::int64_t p = 0; p < count; ++p) {
    for (std::size_t d = 0; d < rank; ++d) origins.push_back(at[d] * a.strides[d] - a.pad_begin[d]);
    for (std::size_t d = rank; d-- > 0;) {
      if (++at[d] < out[d]) break;
      at[d] = 0;
    }
  }
  return origins;
}

// The flat offset in one plane of shape xs (its spatial dims) of a tap at a window origin, or -1
// where it falls outside.
std::int64_t tap_offset(const std::int64_t* origin, const std::int64_t* tap, const Shape& xs, const WindowNd& a) {
  std::int64_t offset = 0;
  for (std::size_t d = 0; d + 2 < xs.size(); ++d) {
    const std::int64_t c = origin[d] + tap[d] * a.dilations[d];
    if (c < 0 || c >= xs[d + 2]) return -1;
    offset = offset * xs[d + 2] + c;
  }
  return offset;
}

// The rows of a conv's reduction (channel, tap) gathered into one panel at a time: 128 x 64
// floats, 32 KB, an L1's worth.
constexpr std::int64_t kDepthBlock = 128;

// out[j] = in[at[j]] (0 where at[j] < 0) for j < n; the runs of consecutive offsets (a tap
// along an output row at stride 1) copied whole. The end of what was written.
float* gather_row(const float* in, const std::int32_t* at, std::int64_t n, float* out) {
  for (std::int64_t j = 0; j < n;) {
    if (at[j] < 0) {
      *out++ = 0.0f, ++j;
      continue;
    }
    std::int64_t run = 1;
    while (j + run < n && at[j + run] == at[j] + run) ++run;
    if (run < 8) {  // strided taps: element by element
      for (std::int64_t i = 0; i < run; ++i) out[i] = in[at[j] + i];
    } else {
      std::memcpy(out, in + at[j], std::size_t(run) * sizeof(float));
    }
    out += run, j += run;
  }
  return out;
}

}  // namespace

std::vector<std::int32_t> tap_offsets(const Shape& xs, const Shape& ys, const WindowNd& a) {
  const std::size_t rank = xs.size() - 2;
  const std::vector<std::int64_t> taps = taps_of(a.kernel), origins = origins_of(ys, a);
  const auto ntaps = std::int64_t(taps.size() / rank), pixels = std::int64_t(origins.size() / rank);
  std::vector<std::int32_t> out(std::size_t(ntaps * pixels));
  for (std::int64_t t = 0; t < ntaps; ++t) {
    for (std::int64_t p = 0; p < pixels; ++p) {
      out[std::size_t(t * pixels + p)] = std::int32_t(
          tap_offset(&origins[std::size_t(p * std::int64_t(rank))], &taps[std::size_t(t * std::int64_t(rank))], xs, a));
    }
  }
  return out;
}

void conv_nd(const float* x, const Shape& xs, const float* w, const float* bias, float* y, const Shape& ys,
             const WindowNd& a, const std::vector<std::int32_t>& offsets, int threads, bool relu) {
  const std::int64_t c = xs[1], k = ys[1], cg = c / a.groups, kg = k / a.groups;
  const std::int64_t plane = elements(Shape(xs.begin() + 2, xs.end()));
  const std::int64_t pixels = elements(Shape(ys.begin() + 2, ys.end()));
  const std::int64_t ntaps = elements(a.kernel), depth = cg * ntaps;  // the reduction: channels x taps
  static const std::vector<float> zeros(std::size_t(kPanel), 0.0f);   // the first block's bias: none
  const std::int32_t* offs = offsets.data();
  for (std::int64_t b = 0; b < xs[0]; ++b) {
    for (std::int64_t g = 0; g < a.groups; ++g) {
      const float* src = x + (b * c + g * cg) * plane;
      float* dst = y + (b * k + g * kg) * pixels;
      // Panel by panel of 64 output pixels, each thread its own: the panel's im2col columns
      // gathered row (channel, tap) by row, then every output channel's product with them,
      // while the panel is still in cache.
      loops::split((pixels + kPanel - 1) / kPanel, 1, threads, [&](std::int64_t q0, std::int64_t q1) {
        thread_local std::vector<float> panel;
        panel.resize(std::size_t(std::min(depth, kDepthBlock) * kPanel));
        for (std::int64_t p0 = q0 * kPanel; p0 < std::min(pixels, q1 * kPanel); p0 += kPanel) {
          const std::int64_t wide = std::min(kPanel, pixels - p0);
          // The reduction in blocks of kDepthBlock rows (channel, tap), each block's panel in L1.
          for (std::int64_t r0 = 0; r0 < depth; r0 += kDepthBlock) {
            const std::int64_t rows = std::min(kDepthBlock, depth - r0);
            float* out = panel.data();
            for (std::int64_t r = r0; r < r0 + rows; ++r) {
              out = gather_row(src + r / ntaps * plane, offs + r % ntaps * pixels + p0, wide, out);
            }
            packed_product(w + g * kg * depth + r0, kg, depth, rows, panel.data(), wide,
                           r0 == 0 ? zeros.data() : nullptr, dst + p0, pixels);
          }
        }
      });
      for (std::int64_t o = 0; (bias || relu) && o < kg; ++o) {
        const float add = bias ? bias[g * kg + o] : 0.0f;
        float* row = dst + o * pixels;
        for (std::int64_t p = 0; p < pixels; ++p) row[p] = relu ? std::max(row[p] + add, 0.0f) : row[p] + add;
      }
    }
  }
}

void gather_depth_taps(const float* x, const DepthTaps& d, std::int64_t od, float* out, int threads) {
  const std::int64_t pixels = d.height * d.width, c = d.channels, row = d.taps * c;
  loops::split(pixels, loops::rows_grain(row), threads, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t t = 0; t < d.taps; ++t) {
      const std::int64_t id = od * d.stride - d.pad + t * d.dilation;
      float* dst = out + p0 * row + t * c;
      if (id < 0 || id >= d.depth) {
        for (std::int64_t p = p0; p < p1; ++p, dst += row) std::fill(dst, dst + c, 0.0f);
        continue;
      }
      const float* src = x + (id * pixels + p0) * c;
      for (std::int64_t p = p0; p < p1; ++p, dst += row, src += c) std::copy(src, src + c, dst);
    }
  });
}

void conv_transpose_nd(const float* x, const Shape& xs, const float* w, const float* bias, float* y, const Shape& ys,
                       const WindowNd& a, const std::vector<std::int32_t>& offsets, int threads) {
  const std::int64_t c = xs[1], k = ys[1], cg = c / a.groups, kg = k / a.groups;
  const std::int64_t plane = elements(Shape(xs.begin() + 2, xs.end()));
  const std::int64_t pixels = elements(Shape(ys.begin() + 2, ys.end()));
  const std::int64_t ntaps = elements(a.kernel), rows = kg * ntaps;
  thread_local std::vector<float> cols;
  cols.resize(std::size_t(rows * plane));
  float* cp = cols.data();
  const std::int32_t* offs = offsets.data();
  for (std::int64_t b = 0; b < xs[0]; ++b) {
    for (std::int64_t g = 0; g < a.groups; ++g) {
      // Every (output channel, tap)'s contribution at every input pixel: the group's weights
      // [cg][kg taps] read transposed times its input [cg][pixels].
      gemm(w + g * cg * rows, x + (b * c + g * cg) * plane, nullptr, {}, cp, rows, plane, cg, true, false, 1.0f, 0.0f,
           threads);
      float* dst = y + (b * k + g * kg) * pixels;
      // Scattered to where each tap lands (output planes shared out: no two threads add to one).
      loops::split(kg, 1, threads, [&](std::int64_t o0, std::int64_t o1) {
        for (std::int64_t o = o0; o < o1; ++o) {
          float* out = dst + o * pixels;
          std::fill_n(out, pixels, bias ? bias[g * kg + o] : 0.0f);
          for (std::int64_t t = 0; t < ntaps; ++t) {
            const float* from = cp + (o * ntaps + t) * plane;
            const std::int32_t* at = offs + t * plane;
            for (std::int64_t p = 0; p < plane; ++p) {
              if (at[p] >= 0) out[at[p]] += from[p];
            }
          }
        }
      });
    }
  }
}

void pool_nd(PoolKind kind, const float* x, const Shape& xs, float* y, const Shape& ys, const WindowNd& a,
             int threads) {
  const bool max = kind == PoolKind::max, lp = kind == PoolKind::lp;
  const std::size_t rank = xs.size() - 2;
  const std::int64_t plane = elements(Shape(xs.begin() + 2, xs.end()));
  const std::int64_t pixels = elements(Shape(ys.begin() + 2, ys.end()));
  const std::vector<std::int64_t> taps = taps_of(a.kernel), origins = origins_of(ys, a);
  const auto ntaps = std::int64_t(taps.size() / rank);
  loops::split(xs[0] * xs[1], 1, threads, [&](std::int64_t q0, std::int64_t q1) {
    for (std::int64_t q = q0; q < q1; ++q) {
      const float* src = x + q * plane;
      for (std::int64_t p = 0; p < pixels; ++p) {
        float acc = max ? -std::numeric_limits<float>::infinity() : 0.0f;
        std::int64_t count = 0;
        for (std::int64_t t = 0; t < ntaps; ++t) {
          const std::int64_t* origin = &origins[std::size_t(p * std::int64_t(rank))];
          const std::int64_t* tap = &taps[std::size_t(t * std::int64_t(rank))];
          const std::int64_t off = tap_offset(origin, tap, xs, a);
          if (off >= 0) {
            acc = max ? std::max(acc, src[off]) : acc + (lp ? std::pow(std::abs(src[off]), a.p) : src[off]);
            ++count;
          } else if (kind == PoolKind::average && a.count_include_pad) {
            // Padding counts only inside the padded extent (ONNX: not past the last pad).
            bool in_padded = true;
            for (std::size_t d = 0; d < rank; ++d) {
              const std::int64_t cd = origin[d] + tap[d] * a.dilations[d];
              in_padded = in_padded && cd >= -a.pad_begin[d] && cd < xs[d + 2] + a.pad_end[d];
            }
            count += in_padded;
          }
        }
        y[q * pixels + p] = max ? acc : lp ? std::pow(acc, 1.0f / a.p) : count > 0 ? acc / float(count) : 0.0f;
      }
    }
  });
}

}  // namespace atvoss::engine
