#include "engine/conv_ops.hpp"

#include <algorithm>
#include <cstring>

#include "engine/vector_build.hpp"

namespace atvoss::engine {
namespace {
using namespace loops;
}  // namespace

void conv_nchw(const float* x, const Shape& xs, const float* w, const Shape& ws, const float* bias, float* y,
               const Shape& ys, const ConvAttrs& a) {
  const std::int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3];
  const std::int64_t k = ws[0], cg = ws[1], r = ws[2], s = ws[3], oh = ys[2], ow = ys[3];
  const std::int64_t kg = k / a.groups;
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t o = 0; o < k; ++o) {
      const std::int64_t g = o / kg;
      float* dst = y + (b * k + o) * oh * ow;
      for (std::int64_t i = 0; i < oh; ++i) {
        for (std::int64_t j = 0; j < ow; ++j) {
          double acc = bias ? bias[o] : 0.0;
          for (std::int64_t ci = 0; ci < cg; ++ci) {
            const float* src = x + (b * c + g * cg + ci) * h * wd;
            const float* filt = w + ((o * cg + ci) * r) * s;
            for (std::int64_t u = 0; u < r; ++u) {
              const std::int64_t hh = i * a.sh - a.pad_top + u * a.dh;
              if (hh < 0 || hh >= h) continue;
              for (std::int64_t v = 0; v < s; ++v) {
                const std::int64_t ww = j * a.sw - a.pad_left + v * a.dw;
                if (ww >= 0 && ww < wd) acc += double(src[hh * wd + ww]) * filt[u * s + v];
              }
            }
          }
          dst[i * ow + j] = float(acc);
        }
      }
    }
  }
}

namespace {

// dst += src, k floats.
ATVOSS_INLINE void add_row_body(const float* src, std::int64_t k, float* dst) {
  for (std::int64_t c = 0; c < k; ++c) dst[c] += src[c];
}
ATVOSS_BUILT_TWICE(add_row, (const float* src, std::int64_t k, float* dst), (src, k, dst))

// The input index whose tap `tap` covers output index o along one axis, or -1.
inline std::int64_t covering(std::int64_t o, std::int64_t tap, std::int64_t in, std::int64_t stride, std::int64_t pad,
                             std::int64_t dilation) {
  const std::int64_t t = o + pad - tap * dilation;
  if (t < 0 || t % stride != 0 || t / stride >= in) return -1;
  return t / stride;
}

}  // namespace

namespace {

// One input pixel's c channels (null: zeros) to g rows `stride` apart, cg channels each.
ATVOSS_INLINE void scatter_groups_body(const float* src, std::int64_t groups, std::int64_t cg, float* dst,
                                       std::int64_t stride) {
  for (std::int64_t g = 0; g < groups; ++g) {
    for (std::int64_t ci = 0; ci < cg; ++ci) dst[g * stride + ci] = src ? src[g * cg + ci] : 0.0f;
  }
}
ATVOSS_BUILT_TWICE(scatter_groups,
                   (const float* src, std::int64_t groups, std::int64_t cg, float* dst, std::int64_t stride),
                   (src, groups, cg, dst, stride))

}  // namespace

void to_phases(const float* x, std::int64_t h, std::int64_t w, std::int64_t c, std::int64_t d, float* phases,
               int threads) {
  const std::int64_t hp = (h + d - 1) / d, wp = (w + d - 1) / d;
  split(d * d * hp, rows_grain(wp * c), threads, [&](std::int64_t q0, std::int64_t q1) {
    for (std::int64_t q = q0; q < q1; ++q) {  // row i of phase image (a, b)
      const std::int64_t phase = q / hp, y = q % hp * d + phase / d, b = phase % d;
      float* dst = phases + q * wp * c;
      for (std::int64_t j = 0; j < wp; ++j, dst += c) {
        const std::int64_t x0 = j * d + b;
        if (y < h && x0 < w)
          std::copy_n(x + (y * w + x0) * c, c, dst);
        else
          std::fill_n(dst, c, 0.0f);
      }
    }
  });
}

void from_phases(const float* phases, std::int64_t h, std::int64_t w, std::int64_t k, std::int64_t d, float* y,
                 int threads) {
  const std::int64_t hp = (h + d - 1) / d, wp = (w + d - 1) / d;
  split(h, rows_grain(w * k), threads, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      for (std::int64_t x0 = 0; x0 < w; ++x0) {
        const std::int64_t phase = r % d * d + x0 % d;
        std::copy_n(phases + ((phase * hp + r / d) * wp + x0 / d) * k, k, y + (r * w + x0) * k);
      }
    }
  });
}

void im2col_nhwc(const float* x, const Shape& xs, std::int64_t r, std::int64_t s, const ConvAttrs& a, float* cols,
                 const Shape& ys, int threads) {
  const std::int64_t c = xs[1], h = xs[2], w = xs[3], oh = ys[2], ow = ys[3], cg = c / a.groups;
  const std::int64_t pixels = xs[0] * oh * ow, row = r * s * cg;
  const auto scatter = scatter_groups_here();
  split(pixels, rows_grain(row * a.groups), threads, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      const std::int64_t b = p / (oh * ow), i = p / ow % oh, j = p % ow;
      for (std::int64_t u = 0; u < r; ++u) {
        const std::int64_t hh = i * a.sh - a.pad_top + u * a.dh;
        for (std::int64_t v = 0; v < s; ++v) {
          const std::int64_t ww = j * a.sw - a.pad_left + v * a.dw;
          const bool inside = hh >= 0 && hh < h && ww >= 0 && ww < w;
          scatter(inside ? x + ((b * h + hh) * w + ww) * c : nullptr, a.groups, cg, cols + p * row + (u * s + v) * cg,
                  pixels * row);
        }
      }
    }
  });
}

void im2col_regions_nhwc(const float* x, const Shape& xs, const std::vector<frontend::ConvRegion>& regions,
                         const ConvAttrs& a, float* cols, int threads) {
  const std::int64_t images = xs[0], c = xs[1], h = xs[2], w = xs[3];
  for (const frontend::ConvRegion& g : regions) {
    const std::int64_t rw = g.w.out_end - g.w.out_begin, pixels = g.pixels(), row = g.taps() * c;
    split(images * pixels, rows_grain(row), threads, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t b = p / pixels, i = g.h.out_begin + p % pixels / rw, j = g.w.out_begin + p % rw;
        float* dst = cols + p * row;
        for (std::int64_t u = g.h.tap_begin; u < g.h.tap_end; ++u) {
          const std::int64_t hh = i * a.sh - a.pad_top + u * a.dh;
          for (std::int64_t v = g.w.tap_begin; v < g.w.tap_end; ++v, dst += c) {
            std::copy_n(x + ((b * h + hh) * w + j * a.sw - a.pad_left + v * a.dw) * c, c, dst);
          }
        }
      }
    });
    cols += images * pixels * row;
  }
}

void scatter_regions_nhwc(const float* parts, const std::vector<frontend::ConvRegion>& regions, float* y,
                          const Shape& ys, int threads) {
  const std::int64_t images = ys[0], k = ys[1], oh = ys[2], ow = ys[3];
  for (const frontend::ConvRegion& g : regions) {
    const std::int64_t rw = g.w.out_end - g.w.out_begin, pixels = g.pixels();
    split(images * pixels, rows_grain(k), threads, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t b = p / pixels, i = g.h.out_begin + p % pixels / rw, j = g.w.out_begin + p % rw;
        std::copy_n(parts + p * k, k, y + ((b * oh + i) * ow + j) * k);
      }
    });
    parts += images * pixels * k;
  }
}

namespace {

ATVOSS_INLINE void join_row_body(const float* src, std::int64_t groups, std::int64_t stride, std::int64_t kg,
                                 const float* bias, float* dst) {
  for (std::int64_t g = 0; g < groups; ++g) {
    for (std::int64_t j = 0; j < kg; ++j) dst[g * kg + j] = src[g * stride + j] + (bias ? bias[g * kg + j] : 0.0f);
  }
}
ATVOSS_BUILT_TWICE(join_row,
                   (const float* src, std::int64_t groups, std::int64_t stride, std::int64_t kg, const float* bias,
                    float* dst),
                   (src, groups, stride, kg, bias, dst))

}  // namespace

void join_groups(const float* parts, std::int64_t groups, std::int64_t pixels, std::int64_t kg, const float* bias,
                 float* out, int threads) {
  const auto run = join_row_here();
  split(pixels, rows_grain(groups * kg), threads, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) run(parts + p * kg, groups, pixels * kg, kg, bias, out + p * groups * kg);
  });
}

bool grouped_conv_fits(std::int64_t k, std::int64_t cg, std::int64_t kg) {
  return cg == kg && (cg == 2 || cg == 4 || cg == 8 || cg == 16) && k >= 16;
}

namespace {

// The 16-channel blocks of K outputs: every 16th channel, the last block moved back to end at K
// (it then overlaps the one before and writes some channels twice, the same values). Each
// starts at a group's first channel, as 16 and K are multiples of the group size.
std::int64_t grouped_blocks(std::int64_t k) { return (k + 15) / 16; }
std::int64_t block_start(std::int64_t kb, std::int64_t k) { return std::min(kb * 16, k - 16); }

}  // namespace

std::vector<float> pack_grouped_weights(const float* w, std::int64_t k, std::int64_t cg, std::int64_t r,
                                        std::int64_t s) {
  std::vector<float> packed(std::size_t(grouped_blocks(k) * 16 * cg * r * s));
  for (std::int64_t kb = 0; kb < grouped_blocks(k); ++kb) {
    for (std::int64_t lane = 0; lane < 16; ++lane) {
      const std::int64_t o = block_start(kb, k) + lane;
      for (std::int64_t ci = 0; ci < cg; ++ci) {
        for (std::int64_t t = 0; t < r * s; ++t)
          packed[((kb * r * s + t) * cg + ci) * 16 + lane] = w[(o * cg + ci) * r * s + t];
      }
    }
  }
  return packed;
}

namespace {

// Output pixels [j0, j0 + kGroupedPix) of output row (b, i) for the 16 channels from k0: each tap's
// 16 input channels loaded once per pixel, permuted CG times so that lane o reads channel
// (o / CG) * CG + ci, its group's ci-th. Pixels past the row or taps outside the image read
// zeros.
constexpr int kGroupedPix = 8;
template <int CG>
ATVOSS_INLINE void grouped_pixels(const float* x, const Shape& xs, const float* wb, const float* bias,
                                  const GroupedConv& g, std::int64_t b, std::int64_t i, std::int64_t j0,
                                  std::int64_t k0, float* y, const Shape& ys) {
  alignas(64) static const float zeros[16] = {};
  const std::int64_t c = xs[1], h = xs[2], wd = xs[3], ow = ys[3];
  const std::int64_t pixels = std::min<std::int64_t>(kGroupedPix, ow - j0);
  Vec16i lanes[CG];
  for (int ci = 0; ci < CG; ++ci) {
    for (int o = 0; o < 16; ++o) lanes[ci][o] = (o / CG) * CG + ci;
  }
  Vec16 start{};
  if (bias) std::memcpy(&start, bias + k0, sizeof start);
  Vec16 acc[kGroupedPix];
  for (int p = 0; p < kGroupedPix; ++p) acc[p] = start;
  for (std::int64_t u = 0; u < g.r; ++u) {
    const std::int64_t hh = i * g.a.sh - g.a.pad_top + u * g.a.dh;
    if (hh < 0 || hh >= h) continue;
    const float* line = x + (b * h + hh) * wd * c + k0;
    for (std::int64_t v = 0; v < g.s; ++v) {
      const float* src[kGroupedPix];
      for (int p = 0; p < kGroupedPix; ++p) {
        const std::int64_t ww = (j0 + p) * g.a.sw - g.a.pad_left + v * g.a.dw;
        src[p] = p < pixels && ww >= 0 && ww < wd ? line + ww * c : zeros;
      }
      const float* tap = wb + (u * g.s + v) * CG * 16;
      if constexpr (CG == 16) {  // one group: each input channel broadcast, a load, not a permute
        for (int ci = 0; ci < CG; ++ci) {
          Vec16 wv;
          std::memcpy(&wv, tap + ci * 16, sizeof wv);
          for (int p = 0; p < kGroupedPix; ++p) acc[p] += wv * src[p][ci];
        }
      } else {
        Vec16 in[kGroupedPix];
        for (int p = 0; p < kGroupedPix; ++p) std::memcpy(&in[p], src[p], sizeof in[p]);
#pragma GCC unroll 8
        for (int ci = 0; ci < CG; ++ci) {
          Vec16 wv;
          std::memcpy(&wv, tap + ci * 16, sizeof wv);
          for (int p = 0; p < kGroupedPix; ++p) acc[p] += wv * __builtin_shuffle(in[p], lanes[ci]);
        }
      }
    }
  }
  for (std::int64_t p = 0; p < pixels; ++p) {
    const Vec16 out = g.relu ? (acc[p] > 0.0f ? acc[p] : Vec16{}) : acc[p];
    std::memcpy(y + ((b * ys[2] + i) * ow + j0 + p) * ys[1] + k0, &out, sizeof out);
  }
}

template <int CG>
ATVOSS_INLINE void grouped_rows_body(const float* x, const Shape& xs, const float* w, const float* bias,
                                     const GroupedConv& g, float* y, const Shape& ys, std::int64_t r0,
                                     std::int64_t r1) {
  const std::int64_t oh = ys[2], ow = ys[3], k = ys[1];
  for (std::int64_t row = r0; row < r1; ++row) {
    for (std::int64_t kb = 0; kb < grouped_blocks(k); ++kb) {
      const float* wb = w + kb * g.r * g.s * CG * 16;
      for (std::int64_t j0 = 0; j0 < ow; j0 += kGroupedPix)
        grouped_pixels<CG>(x, xs, wb, bias, g, row / oh, row % oh, j0, block_start(kb, k), y, ys);
    }
  }
}
// Built twice, as ATVOSS_BUILT_TWICE's bodies are, once per group size.
template <int CG>
void grouped_rows_base(const float* x, const Shape& xs, const float* w, const float* bias, const GroupedConv& g,
                       float* y, const Shape& ys, std::int64_t r0, std::int64_t r1) {
  grouped_rows_body<CG>(x, xs, w, bias, g, y, ys, r0, r1);
}
template <int CG>
ATVOSS_V4 void grouped_rows_v4(const float* x, const Shape& xs, const float* w, const float* bias, const GroupedConv& g,
                               float* y, const Shape& ys, std::int64_t r0, std::int64_t r1) {
  grouped_rows_body<CG>(x, xs, w, bias, g, y, ys, r0, r1);
}
template <int CG>
auto grouped_rows_here() {
  return has_v4() ? &grouped_rows_v4<CG> : &grouped_rows_base<CG>;
}

}  // namespace

void grouped_conv_nhwc(const float* x, const Shape& xs, const float* packed, const float* bias, const GroupedConv& g,
                       float* y, const Shape& ys, int threads) {
  const auto run = g.cg == 2   ? grouped_rows_here<2>()
                   : g.cg == 4 ? grouped_rows_here<4>()
                   : g.cg == 8 ? grouped_rows_here<8>()
                               : grouped_rows_here<16>();
  const std::int64_t macs_per_row = ys[3] * ys[1] * g.r * g.s * g.cg;
  split(ys[0] * ys[2], rows_grain(macs_per_row / 16), threads,
        [&](std::int64_t r0, std::int64_t r1) { run(x, xs, packed, bias, g, y, ys, r0, r1); });
}

// Gathered per output pixel (no two threads write one), each covering window's row added.
void col2im_nhwc(const float* cols, const Shape& x, std::int64_t kh, std::int64_t kw, const ConvAttrs& a,
                 const float* bias, float* y, const Shape& ys, int threads) {
  const std::int64_t h = x[2], w = x[3], k = ys[1], oh = ys[2], ow = ys[3];
  const auto add = add_row_here();
  split(x[0] * oh, rows_grain(ow * k), threads, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t b = r / oh, i = r % oh;
      for (std::int64_t j = 0; j < ow; ++j) {
        float* dst = y + (r * ow + j) * k;
        for (std::int64_t c = 0; c < k; ++c) dst[c] = bias ? bias[c] : 0.0f;
        for (std::int64_t u = 0; u < kh; ++u) {
          const std::int64_t ih = covering(i, u, h, a.sh, a.pad_top, a.dh);
          if (ih < 0) continue;
          for (std::int64_t v = 0; v < kw; ++v) {
            const std::int64_t iw = covering(j, v, w, a.sw, a.pad_left, a.dw);
            if (iw >= 0) add(cols + ((b * h + ih) * w + iw) * kh * kw * k + (u * kw + v) * k, k, dst);
          }
        }
      }
    }
  });
}

void conv_transpose_nchw(const float* x, const Shape& xs, const float* w, const Shape& ws, const float* bias, float* y,
                         const Shape& ys, const ConvAttrs& a) {
  const std::int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3];
  const std::int64_t kg = ws[1], r = ws[2], s = ws[3], k = ys[1], oh = ys[2], ow = ys[3];
  const std::int64_t cg = c / a.groups;
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t o = 0; o < k; ++o) {
      float* dst = y + (b * k + o) * oh * ow;
      std::fill(dst, dst + oh * ow, bias ? bias[o] : 0.0f);
    }
    for (std::int64_t ci = 0; ci < c; ++ci) {
      const std::int64_t g = ci / cg;
      const float* src = x + (b * c + ci) * h * wd;
      for (std::int64_t oo = 0; oo < kg; ++oo) {
        const std::int64_t o = g * kg + oo;
        const float* filt = w + ((ci * kg + oo) * r) * s;
        float* dst = y + (b * k + o) * oh * ow;
        for (std::int64_t i = 0; i < h; ++i) {
          for (std::int64_t u = 0; u < r; ++u) {
            const std::int64_t hh = i * a.sh - a.pad_top + u * a.dh;
            if (hh < 0 || hh >= oh) continue;
            for (std::int64_t j = 0; j < wd; ++j) {
              const float v = src[i * wd + j];
              for (std::int64_t t = 0; t < s; ++t) {
                const std::int64_t ww = j * a.sw - a.pad_left + t * a.dw;
                if (ww >= 0 && ww < ow) dst[hh * ow + ww] += v * filt[u * s + t];
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace atvoss::engine
