// GridSample (plain_ops.hpp) as ONNX defines it and ONNX Runtime computes it: each output point
// reads the input at the grid's (x, y), mapped from [-1, 1] to pixels, with the out-of-range
// coordinates (but a cubic sample's) and taps handled by the padding mode.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/internal/plain_helpers.hpp"
#include "engine/plain_ops.hpp"
#include "engine/vector_build.hpp"

namespace atvoss::engine {
namespace {

// v reflected by the nearer of lo and hi until it lies between them.
float reflect(float v, float lo, float hi) {
  const float range = hi - lo;
  if (v >= lo && v <= hi) return v;
  const bool below = v < lo;
  const float d = below ? lo - v : v - hi;
  const auto folds = std::int64_t(d / range);
  const float r = d - float(folds) * range;
  return (folds % 2 == 0) == below ? lo + r : hi - r;
}

struct Sampler {
  const float* image;  // one channel, h x w
  std::int64_t h, w;
  const GridSampleAttrs& a;
  float lo_x, hi_x, lo_y, hi_y;  // the borders reflection folds at

  // The pixel at (row, col), a tap outside the image handled by the padding mode.
  float at(std::int64_t row, std::int64_t col) const {
    if (a.padding == "zeros") return row >= 0 && row < h && col >= 0 && col < w ? image[row * w + col] : 0.0f;
    if (a.padding == "border") {
      row = std::clamp<std::int64_t>(row, 0, h - 1);
      col = std::clamp<std::int64_t>(col, 0, w - 1);
    } else {
      row = std::clamp<std::int64_t>(std::int64_t(reflect(float(row), lo_y, hi_y)), 0, h - 1);
      col = std::clamp<std::int64_t>(std::int64_t(reflect(float(col), lo_x, hi_x)), 0, w - 1);
    }
    return image[row * w + col];
  }

  // A coordinate outside the borders moved in by the padding mode (zeros: left as it is).
  float pad(float v, float lo, float hi, std::int64_t size) const {
    if (v >= lo && v <= hi) return v;
    if (a.padding == "border") return std::clamp(v, 0.0f, float(size - 1));
    return a.padding == "reflection" ? reflect(v, lo, hi) : v;
  }

  float sample(float gx, float gy) const {
    float x = a.align_corners ? (gx + 1) / 2 * float(w - 1) : ((gx + 1) * float(w) - 1) / 2;
    float y = a.align_corners ? (gy + 1) / 2 * float(h - 1) : ((gy + 1) * float(h) - 1) / 2;
    if (a.mode == "nearest") x = std::nearbyint(x), y = std::nearbyint(y);  // halves to even
    // Cubic pads its taps only, not the coordinate, as ONNX Runtime and torch do (ONNX's
    // reference pads both, which differs near the edges with align_corners).
    if (a.mode != "cubic") x = pad(x, lo_x, hi_x, w), y = pad(y, lo_y, hi_y, h);
    if (a.mode == "nearest") return at(std::int64_t(y), std::int64_t(x));
    const auto x0 = std::int64_t(std::floor(x)), y0 = std::int64_t(std::floor(y));
    const float tx = x - float(x0), ty = y - float(y0);
    if (a.mode == "linear") {
      const float top = (1 - tx) * at(y0, x0) + tx * at(y0, x0 + 1);
      const float bottom = (1 - tx) * at(y0 + 1, x0) + tx * at(y0 + 1, x0 + 1);
      return (1 - ty) * top + ty * bottom;
    }
    float wx[4], wy[4], sum = 0;
    plain::keys_weights(tx, -0.75f, wx);
    plain::keys_weights(ty, -0.75f, wy);
    for (int i = 0; i < 4; ++i) {
      float row = 0;
      for (int j = 0; j < 4; ++j) row += wx[j] * at(y0 - 1 + i, x0 - 1 + j);
      sum += wy[i] * row;
    }
    return sum;
  }
};

}  // namespace

void grid_sample(const float* x, const Shape& xs, const float* grid, const Shape& gs, float* y,
                 const GridSampleAttrs& a, int threads) {
  const std::int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3], points = gs[1] * gs[2];
  const float lo_x = a.align_corners ? 0.0f : -0.5f, hi_x = a.align_corners ? float(w - 1) : float(w) - 0.5f;
  const float lo_y = a.align_corners ? 0.0f : -0.5f, hi_y = a.align_corners ? float(h - 1) : float(h) - 0.5f;
  loops::split(n * c, std::max<std::int64_t>(1, loops::kGrain / std::max<std::int64_t>(points * 4, 1)), threads,
               [&](std::int64_t i0, std::int64_t i1) {
                 for (std::int64_t i = i0; i < i1; ++i) {
                   const Sampler s{x + i * h * w, h, w, a, lo_x, hi_x, lo_y, hi_y};
                   const float* g = grid + (i / c) * points * 2;
                   for (std::int64_t p = 0; p < points; ++p) y[i * points + p] = s.sample(g[2 * p], g[2 * p + 1]);
                 }
               });
}

}  // namespace atvoss::engine
