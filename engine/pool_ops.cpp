// The plain pools (plain_ops.hpp): max and average pools over every window attribute, in NCHW
// or NHWC, and the global pools.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>

#include "engine/internal/plain_helpers.hpp"
#include "engine/plain_ops.hpp"
#include "engine/vector_build.hpp"

namespace atvoss::engine {
namespace {

using namespace loops;

}  // namespace

namespace {

// The taps of an output pixel's window inside the image, and inside the padded image (a
// ceil_mode window may reach past the end pads: those taps count in neither).
struct Taps {
  std::int64_t inside = 0, padded = 0;
};
Taps taps_of(const Window& w, std::int64_t h0, std::int64_t w0, std::int64_t h, std::int64_t wd) {
  Taps t;
  for (std::int64_t r = 0; r < w.kh; ++r) {
    const std::int64_t hh = h0 + r * w.dh;
    for (std::int64_t s = 0; s < w.kw; ++s) {
      const std::int64_t ww = w0 + s * w.dw;
      t.padded += hh < h + w.pad_bottom && ww < wd + w.pad_right ? 1 : 0;
      t.inside += hh >= 0 && hh < h && ww >= 0 && ww < wd ? 1 : 0;
    }
  }
  return t;
}

float divisor(const Window& w, const Taps& t) {
  return float(w.count_include_pad ? t.padded : std::max<std::int64_t>(t.inside, 1));
}

// f(pixel index hh * wd + ww) for each tap of the window at (h0, w0) inside the image.
template <typename F>
void for_each_tap(const Window& w, std::int64_t h0, std::int64_t w0, std::int64_t h, std::int64_t wd, F f) {
  for (std::int64_t r = 0; r < w.kh; ++r) {
    const std::int64_t hh = h0 + r * w.dh;
    if (hh < 0 || hh >= h) continue;
    for (std::int64_t s = 0; s < w.kw; ++s) {
      const std::int64_t ww = w0 + s * w.dw;
      if (ww >= 0 && ww < wd) f(hh * wd + ww);
    }
  }
}

// One output pixel of every channel, NHWC, from the `taps` input pixels of its window (offsets
// in floats): the channels are the inner, contiguous loop, taken 64 at a time in four vectors
// of 16 (one AVX-512 register each, four SSE registers each in the baseline build) that hold
// the running max or sum across the taps. Written as vectors: GCC left the plain loop scalar.
template <bool MAX, int kVecs>
ATVOSS_INLINE void pool_vectors_nhwc(const float* src, const std::int64_t* tap, std::int64_t taps, std::int64_t ch,
                                     float divisor, float* dst) {
  constexpr float kEmpty = MAX ? -std::numeric_limits<float>::infinity() : 0.0f;
  Vec16 acc[kVecs];
  for (int v = 0; v < kVecs; ++v) acc[v] = Vec16{} + kEmpty;
  for (std::int64_t t = 0; t < taps; ++t) {
    const float* p = src + tap[t] + ch;
    for (int v = 0; v < kVecs; ++v) {
      Vec16 x;
      std::memcpy(&x, p + 16 * v, sizeof x);
      acc[v] = MAX ? (acc[v] < x ? x : acc[v]) : acc[v] + x;  // std::max's order: NaN keeps acc
    }
  }
  for (int v = 0; v < kVecs; ++v) {
    const Vec16 out = MAX ? acc[v] : acc[v] / divisor;
    std::memcpy(dst + ch + 16 * v, &out, sizeof out);
  }
}
// The channels 64 at a time, then 16; a rest of a vector, where there are 16 channels or more,
// as the last 16 again (ShuffleNet's 24 channels ran scalar and took 3x ONNX Runtime's time).
template <bool MAX>
ATVOSS_INLINE void pool_pixel_nhwc(const float* src, const std::int64_t* tap, std::int64_t taps, std::int64_t c,
                                   float divisor, float* dst) {
  std::int64_t ch = 0;
  for (; ch + 64 <= c; ch += 64) pool_vectors_nhwc<MAX, 4>(src, tap, taps, ch, divisor, dst);
  for (; ch + 16 <= c; ch += 16) pool_vectors_nhwc<MAX, 1>(src, tap, taps, ch, divisor, dst);
  if (ch < c && c >= 16) {
    pool_vectors_nhwc<MAX, 1>(src, tap, taps, c - 16, divisor, dst);
    return;
  }
  constexpr float kEmpty = MAX ? -std::numeric_limits<float>::infinity() : 0.0f;
  for (; ch < c; ++ch) {
    float acc = kEmpty;
    for (std::int64_t t = 0; t < taps; ++t) acc = MAX ? std::max(acc, src[tap[t] + ch]) : acc + src[tap[t] + ch];
    dst[ch] = MAX ? acc : acc / divisor;
  }
}

// Output rows [r0, r1) of an NHWC pool (row r: image r / oh, output row r % oh), every pixel
// and channel of them.
struct PoolShape {
  std::int64_t c, h, wd, oh, ow;
};
template <bool MAX>
ATVOSS_INLINE void pool_rows_nhwc(const float* in, const PoolShape& x, float* out, const Window& w, std::int64_t r0,
                                  std::int64_t r1) {
  thread_local std::vector<std::int64_t> tap;  // kept between runs: a warm run allocates nothing
  tap.resize(std::size_t(w.kh * w.kw));
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t b = r / x.oh, h0 = r % x.oh * w.sh - w.pad_top;
    const float* src = in + b * x.h * x.wd * x.c;
    for (std::int64_t j = 0; j < x.ow; ++j) {
      const std::int64_t w0 = j * w.sw - w.pad_left;
      std::int64_t taps = 0;
      for_each_tap(w, h0, w0, x.h, x.wd, [&](std::int64_t pixel) { tap[std::size_t(taps++)] = pixel * x.c; });
      const float d = MAX ? 1.0f : divisor(w, taps_of(w, h0, w0, x.h, x.wd));
      pool_pixel_nhwc<MAX>(src, tap.data(), taps, x.c, d, out + (r * x.ow + j) * x.c);
    }
  }
}
ATVOSS_INLINE void max_pool_rows_body(const float* in, const PoolShape& x, float* out, const Window& w, std::int64_t r0,
                                      std::int64_t r1) {
  pool_rows_nhwc<true>(in, x, out, w, r0, r1);
}
ATVOSS_INLINE void avg_pool_rows_body(const float* in, const PoolShape& x, float* out, const Window& w, std::int64_t r0,
                                      std::int64_t r1) {
  pool_rows_nhwc<false>(in, x, out, w, r0, r1);
}
ATVOSS_BUILT_TWICE(max_pool_rows,
                   (const float* in, const PoolShape& x, float* out, const Window& w, std::int64_t r0, std::int64_t r1),
                   (in, x, out, w, r0, r1))
ATVOSS_BUILT_TWICE(avg_pool_rows,
                   (const float* in, const PoolShape& x, float* out, const Window& w, std::int64_t r0, std::int64_t r1),
                   (in, x, out, w, r0, r1))

// One output row of one channel, NCHW.
void pool_row_nchw(bool max, const float* src, std::int64_t h, std::int64_t wd, float* dst, std::int64_t ow,
                   const Window& w, std::int64_t h0) {
  for (std::int64_t j = 0; j < ow; ++j) {
    const std::int64_t w0 = j * w.sw - w.pad_left;
    float acc = max ? -std::numeric_limits<float>::infinity() : 0.0f;
    for_each_tap(w, h0, w0, h, wd,
                 [&](std::int64_t pixel) { acc = max ? std::max(acc, src[pixel]) : acc + src[pixel]; });
    dst[j] = max ? acc : acc / divisor(w, taps_of(w, h0, w0, h, wd));
  }
}

}  // namespace

void pool(bool max, const float* in, const Shape& x, float* out, const Shape& y, const Window& w, bool nhwc,
          int threads) {
  const std::int64_t n = x[0], c = x[1], h = x[2], wd = x[3], oh = y[2], ow = y[3];
  if (nhwc) {
    const auto run = max ? max_pool_rows_here() : avg_pool_rows_here();
    const PoolShape shape{c, h, wd, oh, ow};
    split(n * oh, rows_grain(ow * c), threads,
          [&](std::int64_t r0, std::int64_t r1) { run(in, shape, out, w, r0, r1); });
    return;
  }
#pragma omp parallel for num_threads(threads) collapse(2) schedule(static)
  for (std::int64_t plane = 0; plane < n * c; ++plane) {
    for (std::int64_t i = 0; i < oh; ++i) {
      pool_row_nchw(max, in + plane * h * wd, h, wd, out + (plane * oh + i) * ow, ow, w, i * w.sh - w.pad_top);
    }
  }
}

void global_pool(bool max, const float* in, const Shape& x, float* out, bool nhwc) {
  const std::int64_t n = x[0], c = x[1], hw = elements(x) / (n * c);
  for (std::int64_t b = 0; b < n; ++b) {
    const float* src = in + b * c * hw;
    float* dst = out + b * c;
    for (std::int64_t ch = 0; ch < c; ++ch) dst[ch] = max ? -std::numeric_limits<float>::infinity() : 0.0f;
    for (std::int64_t p = 0; p < hw; ++p) {
      for (std::int64_t ch = 0; ch < c; ++ch) {
        const float v = nhwc ? src[p * c + ch] : src[ch * hw + p];
        dst[ch] = max ? std::max(dst[ch], v) : dst[ch] + v;
      }
    }
    if (!max) {
      for (std::int64_t ch = 0; ch < c; ++ch) dst[ch] /= float(hw);
    }
  }
}

}  // namespace atvoss::engine
