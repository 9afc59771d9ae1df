// The plain normalisations and reductions (plain_ops.hpp): softmax, layer, batch and instance
// norm, LRN, and the Reduce ops.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include "engine/internal/plain_helpers.hpp"
#include "engine/plain_ops.hpp"
#include "engine/vector_build.hpp"

namespace atvoss::engine {
namespace {

using namespace loops;

using plain::broadcast_strides;
using plain::Odometer;

// One row's sum (or mean), max or min, in 8 float lanes the compiler vectorizes.
ATVOSS_INLINE float reduce_row(const float* row, std::int64_t n, bool mean, bool mx, bool mn) {
  constexpr int kLanes = 8;
  float lane[kLanes];
  const float start = mx ? -std::numeric_limits<float>::infinity() : mn ? std::numeric_limits<float>::infinity() : 0.0f;
  std::fill(lane, lane + kLanes, start);
  std::int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const float v = row[k + j];
      lane[j] = mx ? std::max(lane[j], v) : mn ? std::min(lane[j], v) : lane[j] + v;
    }
  }
  double acc = mx || mn ? double(start) : 0.0;
  for (int j = 0; j < kLanes; ++j)
    acc = mx ? std::max(acc, double(lane[j])) : mn ? std::min(acc, double(lane[j])) : acc + lane[j];
  for (; k < n; ++k) acc = mx ? std::max(acc, double(row[k])) : mn ? std::min(acc, double(row[k])) : acc + row[k];
  return float(mean ? acc / double(n) : acc);
}

// Steps a row-major index over `shape` by one element, moving `offset` by `step[d]` per unit
// of dim d (an odometer: the last dim fastest, a dim that wraps carries into the one before).
void advance(std::vector<std::int64_t>& index, const Shape& shape, const std::vector<std::int64_t>& step,
             std::int64_t& offset) {
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    ++index[d];
    offset += step[d];
    if (index[d] < shape[d]) return;
    offset -= step[d] * shape[d];
    index[d] = 0;
  }
}

}  // namespace

namespace {

// fast_exp over 16 lanes at once, in GCC's vector types: written as a loop of fast_exp calls
// the softmax row below ran at 3.6x ONNX Runtime's time (its 197-float rows of ViT's attention:
// 12 vectors and 5 left, and the max and sum in scalar code).
ATVOSS_INLINE void exp16(Vec16& x) {  // x = e^x, in place: a vector argument's ABI depends on AVX-512
  const Vec16i zero = x < -70.0f;
  x = x < -70.0f ? Vec16{} - 70.0f : x;
  x = x > 88.0f ? Vec16{} + 88.0f : x;
  const Vec16 t = x * 1.44269504088896341f;
  const Vec16i n = __builtin_convertvector(t + (t >= 0.0f ? Vec16{} + 0.5f : Vec16{} - 0.5f), Vec16i);
  Vec16 scale;
  const Vec16i bits = (n + 127) << 23;
  std::memcpy(&scale, &bits, sizeof scale);
  Vec16 e;
  plain::exp_of_reduced(x, __builtin_convertvector(n, Vec16), e);
  x = zero ? Vec16{} : e * scale;
}

// One row's softmax: the max, then e^(x - max) and its sum, then the scale, 16 lanes at a
// time; the last len % 16 through a vector of their own, its other lanes -inf (e^-inf adds 0).
// The sum's rounding (about 1e-7 relative over a few thousand terms) is far inside the 1e-4
// the engine is held to.
ATVOSS_INLINE void softmax_row(const float* src, float* dst, std::int64_t len) {
  const std::int64_t whole = len / 16 * 16, rest = len - whole;
  Vec16 tail = Vec16{} - std::numeric_limits<float>::infinity();
  std::memcpy(&tail, src + whole, std::size_t(rest) * sizeof(float));
  Vec16 mv = tail;
  for (std::int64_t k = 0; k < whole; k += 16) {
    Vec16 x;
    std::memcpy(&x, src + k, sizeof x);
    mv = mv < x ? x : mv;
  }
  float m = mv[0];
  for (int j = 1; j < 16; ++j) m = std::max(m, mv[j]);
  Vec16 sv{};
  for (std::int64_t k = 0; k < whole; k += 16) {
    Vec16 e;
    std::memcpy(&e, src + k, sizeof e);
    e -= m;
    exp16(e);
    std::memcpy(dst + k, &e, sizeof e);
    sv += e;
  }
  tail -= m;
  exp16(tail);
  sv += tail;
  float sum = 0.0f;
  for (int j = 0; j < 16; ++j) sum += sv[j];
  const float scale = 1.0f / sum;
  for (std::int64_t k = 0; k < whole; k += 16) {
    Vec16 x;
    std::memcpy(&x, dst + k, sizeof x);
    x *= scale;
    std::memcpy(dst + k, &x, sizeof x);
  }
  tail *= scale;
  std::memcpy(dst + whole, &tail, std::size_t(rest) * sizeof(float));
}
ATVOSS_INLINE void softmax_rows_body(const float* src, float* dst, std::int64_t len, std::int64_t rows) {
  for (std::int64_t i = 0; i < rows; ++i) softmax_row(src + i * len, dst + i * len, len);
}
ATVOSS_BUILT_TWICE(softmax_rows, (const float* src, float* dst, std::int64_t len, std::int64_t rows),
                   (src, dst, len, rows))

}  // namespace

void softmax(const float* in, const Shape& x, std::int64_t axis, float* out, bool log, int threads) {
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= x[d];
  for (std::size_t d = axis + 1; d < x.size(); ++d) inner *= x[d];
  const std::int64_t len = x[axis];
  if (inner == 1 && !log) {  // rows along the last axis (attention): vectorized
    const auto rows = softmax_rows_here();
    split(outer, rows_grain(len), threads,
          [&](std::int64_t r0, std::int64_t r1) { rows(in + r0 * len, out + r0 * len, len, r1 - r0); });
    return;
  }
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const float* src = in + o * len * inner + i;
      float* dst = out + o * len * inner + i;
      float m = -std::numeric_limits<float>::infinity();
      for (std::int64_t k = 0; k < len; ++k) m = std::max(m, src[k * inner]);
      double sum = 0;
      for (std::int64_t k = 0; k < len; ++k) sum += std::exp(double(src[k * inner] - m));
      for (std::int64_t k = 0; k < len; ++k) {
        const double v = double(src[k * inner] - m);
        dst[k * inner] = log ? float(v - std::log(sum)) : float(std::exp(v) / sum);
      }
    }
  }
}

namespace {

struct Moments {
  float mean, inv;  // the mean and 1 / sqrt(variance + epsilon) of a row
};
// Two passes, the mean, then the variance about it (no cancellation), each in float lanes.
ATVOSS_INLINE Moments moments(const float* src, std::int64_t len, float epsilon) {
  const float mean = reduce_row(src, len, true, false, false);
  constexpr int kLanes = 16;
  float lane[kLanes] = {};
  std::int64_t k = 0;
  for (; k + kLanes <= len; k += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane[j] += (src[k + j] - mean) * (src[k + j] - mean);
  }
  double var = 0;
  for (int j = 0; j < kLanes; ++j) var += lane[j];
  for (; k < len; ++k) var += (src[k] - mean) * (src[k] - mean);
  return {mean, float(1.0 / std::sqrt(var / double(len) + epsilon))};
}

ATVOSS_INLINE void layer_norm_rows_body(const float* src, float* dst, std::int64_t len, std::int64_t rows,
                                        float epsilon, const float* gamma, const float* beta) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* x = src + i * len;
    float* y = dst + i * len;
    const auto [mean, inv] = moments(x, len, epsilon);
    for (std::int64_t k = 0; k < len; ++k)
      y[k] = (x[k] - mean) * inv * (gamma ? gamma[k] : 1.0f) + (beta ? beta[k] : 0.0f);
  }
}
ATVOSS_BUILT_TWICE(layer_norm_rows,
                   (const float* src, float* dst, std::int64_t len, std::int64_t rows, float epsilon,
                    const float* gamma, const float* beta),
                   (src, dst, len, rows, epsilon, gamma, beta))

}  // namespace

void layer_norm(const float* in, const Shape& x, std::int64_t axis, float epsilon, const float* gamma,
                const float* beta, float* out, int threads) {
  std::int64_t outer = 1, len = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= x[d];
  for (std::size_t d = axis; d < x.size(); ++d) len *= x[d];
  const auto rows = layer_norm_rows_here();
  split(outer, rows_grain(len), threads, [&](std::int64_t r0, std::int64_t r1) {
    rows(in + r0 * len, out + r0 * len, len, r1 - r0, epsilon, gamma, beta);
  });
}

namespace {

// Pixels of channels-innermost data times k[ch] plus s[ch].
// relu: max(0, x) of each result, in the same pass (a BatchNormalization whose one reader is
// a Relu: DenseNet's pre-activations).
ATVOSS_INLINE void scale_shift_body(const float* in, float* out, std::int64_t pixels, std::int64_t c, const float* k,
                                    const float* s, bool relu) {
  for (std::int64_t p = 0; p < pixels; ++p) {
    if (relu) {
      for (std::int64_t ch = 0; ch < c; ++ch) out[p * c + ch] = std::max(in[p * c + ch] * k[ch] + s[ch], 0.0f);
    } else {
      for (std::int64_t ch = 0; ch < c; ++ch) out[p * c + ch] = in[p * c + ch] * k[ch] + s[ch];
    }
  }
}
ATVOSS_BUILT_TWICE(scale_shift,
                   (const float* in, float* out, std::int64_t pixels, std::int64_t c, const float* k, const float* s,
                    bool relu),
                   (in, out, pixels, c, k, s, relu))

}  // namespace

void batch_norm(const float* in, const Shape& x, const float* scale, const float* bias, const float* mean,
                const float* var, float epsilon, float* out, bool nhwc, int threads, bool relu) {
  const std::int64_t n = x[0], c = x[1], inner = elements(x) / (n * c);
  // The per-channel factor and shift, kept between runs (a model's run allocates nothing once warm).
  thread_local std::vector<float> k, s;
  k.resize(static_cast<std::size_t>(c));
  s.resize(static_cast<std::size_t>(c));
  for (std::int64_t ch = 0; ch < c; ++ch) {
    const double kk = scale[ch] / std::sqrt(double(var[ch]) + epsilon);
    k[std::size_t(ch)] = float(kk);
    s[std::size_t(ch)] = float(bias[ch] - mean[ch] * kk);
  }
  const auto run = scale_shift_here();
  const float* kp = k.data();
  const float* sp = s.data();
  if (nhwc) {  // channels innermost: one pass over the pixels with the per-channel k and s
    split(n * inner, rows_grain(c), threads,
          [&](std::int64_t p0, std::int64_t p1) { run(in + p0 * c, out + p0 * c, p1 - p0, c, kp, sp, relu); });
    return;
  }
  // NCHW: each plane one channel's, a "pixel" of one channel repeated inner times.
  split(n * c, rows_grain(inner), threads, [&](std::int64_t q0, std::int64_t q1) {
    for (std::int64_t q = q0; q < q1; ++q) {
      const std::int64_t ch = q % c;
      for (std::int64_t i = 0; i < inner; ++i) {
        const float y = in[q * inner + i] * kp[ch] + sp[ch];
        out[q * inner + i] = relu ? std::max(y, 0.0f) : y;
      }
    }
  });
}

namespace {

struct LrnParams {
  std::int64_t before, after;  // the window: floor and ceil of (size - 1) / 2 around a channel
  float scale, beta, bias;     // alpha / size
};

// v^-beta: AlexNet's, GoogLeNet's and CaffeNet's 0.75 as 1 / (sqrt(v) sqrt(sqrt(v))), which
// vectorizes (std::pow per element took 9 ms for one 56 x 56 x 192 LRN); any other by pow.
ATVOSS_INLINE void lrn_scale(const float* src, float* sums, std::int64_t n, const LrnParams& p) {
  if (p.beta == 0.75f) {
    for (std::int64_t i = 0; i < n; ++i) {
      const float v = p.bias + p.scale * sums[i], r = std::sqrt(v);
      sums[i] = src[i] / (r * std::sqrt(r));
    }
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) sums[i] = src[i] / std::pow(p.bias + p.scale * sums[i], p.beta);
}

// NHWC: pixels [p0, p1) of c channels, the window's sum of squares run along each pixel's row.
ATVOSS_INLINE void lrn_pixels_body(const float* in, std::int64_t c, std::int64_t p0, std::int64_t p1,
                                   const LrnParams& p, float* out) {
  for (std::int64_t q = p0; q < p1; ++q) {
    const float* src = in + q * c;
    float* dst = out + q * c;
    double sq = 0;
    for (std::int64_t k = 0; k <= std::min(p.after, c - 1); ++k) sq += double(src[k]) * src[k];
    for (std::int64_t ch = 0; ch < c; ++ch) {
      dst[ch] = float(sq);
      if (ch + p.after + 1 < c) sq += double(src[ch + p.after + 1]) * src[ch + p.after + 1];
      if (ch - p.before >= 0) sq -= double(src[ch - p.before]) * src[ch - p.before];
    }
    lrn_scale(src, dst, c, p);
  }
}
ATVOSS_BUILT_TWICE(lrn_pixels,
                   (const float* in, std::int64_t c, std::int64_t p0, std::int64_t p1, const LrnParams& p, float* out),
                   (in, c, p0, p1, p, out))

// NCHW: planes [q0, q1) (image q / c, channel q % c) of hw pixels, the window's planes summed.
ATVOSS_INLINE void lrn_planes_body(const float* in, std::int64_t c, std::int64_t hw, std::int64_t q0, std::int64_t q1,
                                   const LrnParams& p, float* out) {
  for (std::int64_t q = q0; q < q1; ++q) {
    const std::int64_t ch = q % c, lo = std::max<std::int64_t>(0, ch - p.before), hi = std::min(c - 1, ch + p.after);
    const float* image = in + (q - ch) * hw;
    float* dst = out + q * hw;
    std::fill_n(dst, hw, 0.0f);
    for (std::int64_t k = lo; k <= hi; ++k) {
      for (std::int64_t i = 0; i < hw; ++i) dst[i] += image[k * hw + i] * image[k * hw + i];
    }
    lrn_scale(in + q * hw, dst, hw, p);
  }
}
ATVOSS_BUILT_TWICE(lrn_planes,
                   (const float* in, std::int64_t c, std::int64_t hw, std::int64_t q0, std::int64_t q1,
                    const LrnParams& p, float* out),
                   (in, c, hw, q0, q1, p, out))

}  // namespace

void lrn(const float* in, const Shape& x, std::int64_t size, float alpha, float beta, float bias, float* out, bool nhwc,
         int threads) {
  const std::int64_t n = x[0], c = x[1], hw = elements(x) / (n * c);
  const LrnParams p{(size - 1) / 2, size - 1 - (size - 1) / 2, alpha / float(size), beta, bias};
  if (nhwc) {
    const auto run = lrn_pixels_here();
    split(n * hw, rows_grain(c), threads, [&](std::int64_t p0, std::int64_t p1) { run(in, c, p0, p1, p, out); });
    return;
  }
  const auto run = lrn_planes_here();
  split(n * c, rows_grain(hw), threads, [&](std::int64_t q0, std::int64_t q1) { run(in, c, hw, q0, q1, p, out); });
}

namespace {

// Whether the reduced axes are the last ones (and at least one): each output is a contiguous row.
bool reduces_trailing_axes(const std::vector<bool>& reduced) {
  std::size_t d = reduced.size();
  while (d > 0 && reduced[d - 1]) --d;
  for (std::size_t i = 0; i < d; ++i) {
    if (reduced[i]) return false;
  }
  return d < reduced.size();
}

}  // namespace

namespace {

// What a reduction adds up per element, and what it makes of the total (ONNX's Reduce ops).
enum class Gather { sum, max, min, prod, abs, square, exp };
struct Reduction {
  Gather gather;
  bool mean = false, sqrt = false, log = false;
};

std::optional<Reduction> reduction_of(const std::string& op) {
  static const std::map<std::string, Reduction> ops = {
      {"ReduceSum", {Gather::sum}},
      {"ReduceMean", {Gather::sum, true}},
      {"ReduceMax", {Gather::max}},
      {"ReduceMin", {Gather::min}},
      {"ReduceProd", {Gather::prod}},
      {"ReduceL1", {Gather::abs}},
      {"ReduceL2", {Gather::square, false, true}},
      {"ReduceSumSquare", {Gather::square}},
      {"ReduceLogSum", {Gather::sum, false, false, true}},
      // Summed as exp(v - the output's max) and the max added back after the log, as ONNX
      // Runtime does, so that a large v does not overflow.
      {"ReduceLogSumExp", {Gather::exp, false, false, true}},
  };
  const auto it = ops.find(op);
  return it == ops.end() ? std::nullopt : std::optional<Reduction>(it->second);
}

double gathered(Gather g, double a, double v) {
  switch (g) {
    case Gather::max:
      return std::max(a, v);
    case Gather::min:
      return std::min(a, v);
    case Gather::prod:
      return a * v;
    case Gather::abs:
      return a + std::abs(v);
    case Gather::square:
      return a + v * v;
    default:
      return a + v;  // sum; exp adds exp(v - max), taken by the caller
  }
}

}  // namespace

bool reduce_op(const std::string& op) { return reduction_of(op).has_value(); }

bool reduce(const std::string& op, const float* in, const Shape& x, const std::vector<bool>& reduced, float* out) {
  const std::optional<Reduction> how = reduction_of(op);
  if (!how) return false;
  const Gather g = how->gather;
  const std::size_t r = x.size();
  Shape y = x;
  std::int64_t count = 1;
  for (std::size_t d = 0; d < r; ++d) {
    if (reduced[d]) count *= x[d], y[d] = 1;
  }
  const std::int64_t ny = elements(y);
  const bool row_op = g == Gather::sum || g == Gather::max || g == Gather::min;
  if (count > 1 && reduces_trailing_axes(reduced) && row_op && !how->log) {  // rows (a LayerNorm's mean): vectorized
    for (std::int64_t k = 0; k < ny; ++k) {
      out[k] = reduce_row(in + k * count, count, how->mean, g == Gather::max, g == Gather::min);
    }
    return true;
  }
  const auto ys = broadcast_strides(y, r);  // the output offset of each input index
  const auto each = [&](const auto& f) {
    std::vector<std::int64_t> index(r, 0);
    std::int64_t o = 0;
    for (std::int64_t i = 0; i < elements(x); ++i) {
      f(o, double(in[i]));
      advance(index, x, ys, o);
    }
  };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> shift(std::size_t(ny), 0.0);
  if (g == Gather::exp) {
    std::fill(shift.begin(), shift.end(), -inf);
    each([&](std::int64_t o, double v) { shift[std::size_t(o)] = std::max(shift[std::size_t(o)], v); });
    for (double& m : shift) m = std::isfinite(m) ? m : 0.0;
  }
  std::vector<double> acc(std::size_t(ny), g == Gather::max    ? -inf
                                           : g == Gather::min  ? inf
                                           : g == Gather::prod ? 1.0
                                                               : 0.0);
  each([&](std::int64_t o, double v) {
    double& a = acc[std::size_t(o)];
    a = g == Gather::exp ? a + std::exp(v - shift[std::size_t(o)]) : gathered(g, a, v);
  });
  for (std::int64_t k = 0; k < ny; ++k) {
    double v = how->mean ? acc[std::size_t(k)] / double(count) : acc[std::size_t(k)];
    if (how->sqrt) v = std::sqrt(v);
    if (how->log) v = std::log(v) + shift[std::size_t(k)];
    out[k] = float(v);
  }
  return true;
}

void cumulative_sum(const float* in, const Shape& x, std::size_t axis, bool exclusive, bool reverse, float* out) {
  const auto [outer, len, inner] = plain::around_axis(x, axis);
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      float sum = 0;
      for (std::int64_t k = 0; k < len; ++k) {
        const std::int64_t at = (o * len + (reverse ? len - 1 - k : k)) * inner + i;
        if (exclusive) {
          out[at] = sum;
          sum += in[at];
        } else {
          sum += in[at];
          out[at] = sum;
        }
      }
    }
  }
}

namespace {

// Block g of a group norm: its `per` planes of len / per values normalised by the block's moments,
// each plane by its affine's entry (the group's where per_group).
ATVOSS_INLINE void norm_block_body(const float* src, float* dst, std::int64_t len, std::int64_t per, std::int64_t g,
                                   bool per_group, float epsilon, const float* scale, const float* bias) {
  const auto [mean, inv] = moments(src, len, epsilon);
  const std::int64_t plane = len / std::max<std::int64_t>(per, 1);
  for (std::int64_t ch = 0; ch < per; ++ch) {
    const std::int64_t at = per_group ? g : g * per + ch;  // the affine's index
    const float a = inv * scale[at], b = bias[at];
    const float* s = src + ch * plane;
    float* d = dst + ch * plane;
    for (std::int64_t k = 0; k < plane; ++k) d[k] = (s[k] - mean) * a + b;
  }
}
ATVOSS_BUILT_TWICE(norm_block,
                   (const float* src, float* dst, std::int64_t len, std::int64_t per, std::int64_t g, bool per_group,
                    float epsilon, const float* scale, const float* bias),
                   (src, dst, len, per, g, per_group, epsilon, scale, bias))

}  // namespace

void group_norm(const float* x, const Shape& xs, std::int64_t groups, const float* scale, const float* bias,
                bool per_group, float epsilon, float* y, int threads) {
  const std::int64_t blocks = xs[0] * groups, len = elements(xs) / std::max<std::int64_t>(blocks, 1);
  const std::int64_t per = xs[1] / groups;
  const auto block = norm_block_here();
  split(blocks, rows_grain(len), threads, [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t b = b0; b < b1; ++b) {
      block(x + b * len, y + b * len, len, per, b % groups, per_group, epsilon, scale, bias);
    }
  });
}

void instance_norm(const float* x, const Shape& xs, const float* scale, const float* bias, float epsilon, float* y,
                   int threads) {
  group_norm(x, xs, xs[1], scale, bias, false, epsilon, y, threads);
}

void lp_normalize(const float* x, const Shape& xs, std::size_t axis, int p, float* y) {
  const plain::AroundAxis s = plain::around_axis(xs, axis);
  for (std::int64_t o = 0; o < s.outer; ++o) {
    for (std::int64_t i = 0; i < s.inner; ++i) {
      const std::int64_t base = o * s.len * s.inner + i;
      double norm = 0;
      for (std::int64_t k = 0; k < s.len; ++k) {
        const double v = x[base + k * s.inner];
        norm += p == 1 ? std::abs(v) : v * v;
      }
      if (p == 2) norm = std::sqrt(norm);
      for (std::int64_t k = 0; k < s.len; ++k) {
        y[base + k * s.inner] = norm == 0 ? 0.0f : float(x[base + k * s.inner] / norm);
      }
    }
  }
}

void hardmax(const float* x, const Shape& xs, std::size_t axis, float* y) {
  const plain::AroundAxis s = plain::around_axis(xs, axis);
  for (std::int64_t o = 0; o < s.outer; ++o) {
    for (std::int64_t i = 0; i < s.inner; ++i) {
      const std::int64_t base = o * s.len * s.inner + i;
      std::int64_t best = 0;
      for (std::int64_t k = 1; k < s.len; ++k) {
        if (x[base + k * s.inner] > x[base + best * s.inner]) best = k;
      }
      for (std::int64_t k = 0; k < s.len; ++k) y[base + k * s.inner] = k == best ? 1.0f : 0.0f;
    }
  }
}

void mean_variance_normalize(const float* x, const Shape& xs, const std::vector<bool>& reduced, float* y) {
  // Each element's group: its index with the reduced dims dropped.
  std::vector<std::int64_t> stride(xs.size(), 0), index(xs.size(), 0);
  std::int64_t groups = 1;
  for (std::size_t d = xs.size(); d-- > 0;) {
    if (reduced[d]) continue;
    stride[d] = groups;
    groups *= xs[d];
  }
  const std::int64_t n = elements(xs), per = n / std::max<std::int64_t>(groups, 1);
  std::vector<std::int64_t> group(static_cast<std::size_t>(n));
  for (std::int64_t e = 0; e < n; ++e) {
    std::int64_t g = 0;
    for (std::size_t d = 0; d < xs.size(); ++d) g += index[d] * stride[d];
    group[std::size_t(e)] = g;
    for (std::size_t d = xs.size(); d-- > 0;) {  // the next element's index
      if (++index[d] < xs[d]) break;
      index[d] = 0;
    }
  }
  std::vector<double> mean(static_cast<std::size_t>(groups), 0.0), var(static_cast<std::size_t>(groups), 0.0);
  for (std::int64_t e = 0; e < n; ++e) mean[std::size_t(group[std::size_t(e)])] += x[e];
  for (auto& m : mean) m /= double(per);
  for (std::int64_t e = 0; e < n; ++e) {
    const double d = x[e] - mean[std::size_t(group[std::size_t(e)])];
    var[std::size_t(group[std::size_t(e)])] += d * d;
  }
  // (x - mean) / sqrt(variance), as ONNX Runtime computes it: no epsilon, so a constant group
  // gives NaN there too.
  for (std::int64_t e = 0; e < n; ++e) {
    const std::size_t g = std::size_t(group[std::size_t(e)]);
    y[e] = float((x[e] - mean[g]) / std::sqrt(var[g] / double(per)));
  }
}

void eye_like(std::int64_t rows, std::int64_t cols, std::int64_t k, float* y) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) y[r * cols + c] = c - r == k ? 1.0f : 0.0f;
  }
}

void rms_norm(const float* x, const Shape& xs, std::int64_t axis, float epsilon, const float* scale, float* y) {
  const std::int64_t len = elements(Shape(xs.begin() + axis, xs.end())),
                     rows = elements(xs) / std::max<std::int64_t>(len, 1);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* src = x + r * len;
    double squares = 0;
    for (std::int64_t k = 0; k < len; ++k) squares += double(src[k]) * src[k];
    const float inv = float(1.0 / std::sqrt(squares / double(len) + epsilon));
    for (std::int64_t k = 0; k < len; ++k) y[r * len + k] = src[k] * inv * (scale ? scale[k] : 1.0f);
  }
}

}  // namespace atvoss::engine
