#include "engine/plain_ops.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>

#include "engine/vector_build.hpp"

namespace atvoss::engine {
namespace {

using namespace loops;

// Counts over the extents `size` in row-major order, offsets `a` and `b` moving by their
// strides per unit of each dim (an odometer; seek starts it at any count).
struct Odometer {
  std::vector<std::int64_t> size, sa, sb, index;
  std::int64_t a = 0, b = 0;
  void seek(std::int64_t i) {
    index.assign(size.size(), 0);
    a = b = 0;
    for (std::size_t k = size.size(); k-- > 0;) {
      index[k] = i % size[k];
      i /= size[k];
      a += index[k] * sa[k];
      b += index[k] * sb[k];
    }
  }
  void next() {
    for (std::size_t k = size.size(); k-- > 0;) {
      ++index[k];
      a += sa[k];
      b += sb[k];
      if (index[k] < size[k]) return;
      a -= sa[k] * size[k];
      b -= sb[k] * size[k];
      index[k] = 0;
    }
  }
};

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

// Strides of shape s aligned right to rank r, 0 along the dims s broadcasts (size 1 or absent).
std::vector<std::int64_t> broadcast_strides(const Shape& s, std::size_t r) {
  std::vector<std::int64_t> st(r, 0);
  std::int64_t step = 1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::size_t d = s.size() - 1 - i, o = r - 1 - i;
    st[o] = s[d] == 1 ? 0 : step;
    step *= s[d];
  }
  return st;
}

bool broadcasts_to(const Shape& s, const Shape& out) {
  if (s.size() > out.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::int64_t d = s[s.size() - 1 - i], o = out[out.size() - 1 - i];
    if (d != o && d != 1) return false;
  }
  return true;
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

// A binary op's whole loop, one instantiation per op (F a lambda's type) so that it inlines and the loop vectorizes
// (a call through a pointer per element cost 3-5 ns: BERT's elementwise ops took 40 % of its
// run). The innermost dim runs as a loop of its own, with each operand's stride along it 0 or
// 1; the outer dims count like an odometer.
struct Broadcast {
  const float* a;
  const float* b;
  float* out;
  Shape so;
  std::vector<std::int64_t> ta, tb;
};

template <class F, std::int64_t IA, std::int64_t IB>
ATVOSS_INLINE void inner_body(const float* a, const float* b, float* out, std::int64_t n) {
  const F f{};
  for (std::int64_t j = 0; j < n; ++j) out[j] = f(a[j * IA], b[j * IB]);
}
template <class F, std::int64_t IA, std::int64_t IB>
void inner_base(const float* a, const float* b, float* out, std::int64_t n) {
  inner_body<F, IA, IB>(a, b, out, n);
}
template <class F, std::int64_t IA, std::int64_t IB>
ATVOSS_V4 void inner_v4(const float* a, const float* b, float* out, std::int64_t n) {
  inner_body<F, IA, IB>(a, b, out, n);
}

using Run = void (*)(const float*, const float*, float*, std::int64_t);
template <class F, std::int64_t IA, std::int64_t IB>
Run inner_run() {
  return has_v4() ? Run(&inner_v4<F, IA, IB>) : Run(&inner_base<F, IA, IB>);
}

// The output's rows [r0, r1) (rows: every dim but the last), each operand's offset counted by
// an odometer over the outer dims.
void binary_rows(const Broadcast& x, Run run, std::int64_t r0, std::int64_t r1) {
  const std::size_t outer = x.so.size() - 1;  // REQUIRES: rank >= 1
  const std::int64_t inner = x.so[outer];
  Odometer o;
  o.size.assign(x.so.begin(), x.so.begin() + outer);
  o.sa.assign(x.ta.begin(), x.ta.begin() + outer);
  o.sb.assign(x.tb.begin(), x.tb.begin() + outer);
  o.seek(r0);
  for (std::int64_t row = r0; row < r1; ++row, o.next()) run(x.a + o.a, x.b + o.b, x.out + row * inner, inner);
}

template <class F>
void binary_loop(const Broadcast& x, int threads) {
  const std::size_t r = x.so.size();
  const std::int64_t n = elements(x.so), inner = r ? x.so[r - 1] : 1;
  const std::int64_t ia = r ? x.ta[r - 1] : 0, ib = r ? x.tb[r - 1] : 0;
  const Run run = ia && ib ? inner_run<F, 1, 1>()
                  : ia     ? inner_run<F, 1, 0>()
                  : ib     ? inner_run<F, 0, 1>()
                           : inner_run<F, 0, 0>();
  if (n == 0) return;
  const std::int64_t rows = n / inner;
  if (rows == 1) {  // one long row: split along it
    split(inner, kGrain, threads,
          [&](std::int64_t j0, std::int64_t j1) { run(x.a + j0 * ia, x.b + j0 * ib, x.out + j0, j1 - j0); });
    return;
  }
  split(rows, rows_grain(inner), threads, [&](std::int64_t r0, std::int64_t r1) { binary_rows(x, run, r0, r1); });
}

using BinaryLoop = void (*)(const Broadcast&, int);

const std::map<std::string, BinaryLoop>& binary_ops() {
  static const std::map<std::string, BinaryLoop> ops = {
      {"Add", &binary_loop<decltype([](float x, float y) { return x + y; })>},
      {"Sub", &binary_loop<decltype([](float x, float y) { return x - y; })>},
      {"Mul", &binary_loop<decltype([](float x, float y) { return x * y; })>},
      {"Div", &binary_loop<decltype([](float x, float y) { return x / y; })>},
      {"Pow", &binary_loop<decltype([](float x, float y) { return std::pow(x, y); })>},
      {"Max", &binary_loop<decltype([](float x, float y) { return std::max(x, y); })>},
      {"Min", &binary_loop<decltype([](float x, float y) { return std::min(x, y); })>},
      {"PRelu", &binary_loop<decltype([](float x, float slope) { return x < 0 ? x * slope : x; })>},
      // Comparisons and logic give bool, held as 0 or 1 (engine/model.hpp).
      {"Equal", &binary_loop<decltype([](float x, float y) { return x == y ? 1.0f : 0.0f; })>},
      {"Less", &binary_loop<decltype([](float x, float y) { return x < y ? 1.0f : 0.0f; })>},
      {"LessOrEqual", &binary_loop<decltype([](float x, float y) { return x <= y ? 1.0f : 0.0f; })>},
      {"Greater", &binary_loop<decltype([](float x, float y) { return x > y ? 1.0f : 0.0f; })>},
      {"GreaterOrEqual", &binary_loop<decltype([](float x, float y) { return x >= y ? 1.0f : 0.0f; })>},
      {"And", &binary_loop<decltype([](float x, float y) { return x != 0.0f && y != 0.0f ? 1.0f : 0.0f; })>},
      {"Or", &binary_loop<decltype([](float x, float y) { return x != 0.0f || y != 0.0f ? 1.0f : 0.0f; })>},
      {"Xor", &binary_loop<decltype([](float x, float y) { return (x != 0.0f) != (y != 0.0f) ? 1.0f : 0.0f; })>},
      // An integer tensor's Div truncates toward zero (ONNX).
      {"IntDiv", &binary_loop<decltype([](float x, float y) { return std::trunc(x / y); })>},
  };
  return ops;
}

// A unary op's whole loop, F inlined (as binary_loop).
template <class F>
ATVOSS_INLINE void unary_body(const float* in, float* out, std::int64_t n, float alpha, float beta) {
  const F f{};
  for (std::int64_t i = 0; i < n; ++i) out[i] = f(in[i], alpha, beta);
}
template <class F>
void unary_base(const float* in, float* out, std::int64_t n, float alpha, float beta) {
  unary_body<F>(in, out, n, alpha, beta);
}
template <class F>
ATVOSS_V4 void unary_v4(const float* in, float* out, std::int64_t n, float alpha, float beta) {
  unary_body<F>(in, out, n, alpha, beta);
}
template <class F>
void unary_loop(const float* in, float* out, std::int64_t n, float alpha, float beta, int threads) {
  const auto run = has_v4() ? &unary_v4<F> : &unary_base<F>;
  split(n, kGrain, threads, [&](std::int64_t i0, std::int64_t i1) { run(in + i0, out + i0, i1 - i0, alpha, beta); });
}
using UnaryLoop = void (*)(const float*, float*, std::int64_t, float, float, int);

// e^x in a form the compiler vectorizes (std::exp is a call per element): Cody and Waite's
// range reduction x = n ln 2 + r, |r| <= ln 2 / 2, then Cephes' degree-7 polynomial for e^r
// (relative error about 2e-7), scaled by 2^n built in the exponent bits. Above 88, e^88.
// Below -70 the result is 0: anything smaller turns subnormal once a softmax scales it (a
// masked attention score of -10000 gave 2^-126 / 64), and every FMA of the next matmul that
// reads a subnormal takes a microcode assist (BERT's attention with a padding mask ran 2x
// slower); e^-70 is 4e-31, nothing beside a softmax's largest term of 1.
inline float fast_exp(float x) {
  const float keep = x < -70.0f ? 0.0f : 1.0f;
  x = std::min(std::max(x, -70.0f), 88.0f);
  const float t = x * 1.44269504088896341f;
  const int n = int(t + (t >= 0.0f ? 0.5f : -0.5f));
  const float fn = float(n);
  const float r = (x - fn * 0.693359375f) + fn * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = (p * r * r + r + 1.0f) * std::bit_cast<float>((n + 127) << 23);
  return e * keep;
}

// erf(x) by Abramowitz and Stegun's 7.1.26 (absolute error below 1.5e-7), vectorizable as
// fast_exp is; the engine's outputs are checked against ONNX Runtime within 1e-4.
inline float fast_erf(float x) {
  const float a = std::abs(x), t = 1.0f / (1.0f + 0.3275911f * a);
  const float poly =
      t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  return std::copysign(1.0f - poly * fast_exp(-a * a), x);
}

float erf_gelu(float x) { return 0.5f * x * (1.0f + fast_erf(x * 0.70710678118654752f)); }
float tanh_gelu(float x) { return 0.5f * x * (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x))); }

}  // namespace

std::int64_t elements(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

namespace {

// A p x q block of out (rows `ld_out` apart) from in read at strides (1, q_step): the input's
// contiguous dim becomes the output's rows, walked in 16 x 16 tiles that stay in L1.
ATVOSS_INLINE void transpose_block_body(const float* in, std::int64_t q_step, float* out, std::int64_t ld_out,
                                        std::int64_t p, std::int64_t q) {
  constexpr std::int64_t kTile = 16;
  for (std::int64_t i0 = 0; i0 < p; i0 += kTile) {
    const std::int64_t i1 = std::min(p, i0 + kTile);
    for (std::int64_t j0 = 0; j0 < q; j0 += kTile) {
      const std::int64_t j1 = std::min(q, j0 + kTile);
      for (std::int64_t i = i0; i < i1; ++i) {
        for (std::int64_t j = j0; j < j1; ++j) out[i * ld_out + j] = in[i + j * q_step];
      }
    }
  }
}
ATVOSS_BUILT_TWICE(transpose_block,
                   (const float* in, std::int64_t q_step, float* out, std::int64_t ld_out, std::int64_t p,
                    std::int64_t q),
                   (in, q_step, out, ld_out, p, q))

// Pixels [p0, p1) of one image from c planes of hw floats to c-float pixels. Three channels
// (every RGB input of a vision model) a loop of its own, which the compiler vectorizes.
ATVOSS_INLINE void planes_to_pixels_body(const float* src, std::int64_t hw, std::int64_t c, float* dst, std::int64_t p0,
                                         std::int64_t p1) {
  if (c == 3) {
    for (std::int64_t p = p0; p < p1; ++p) {
      dst[3 * p] = src[p];
      dst[3 * p + 1] = src[hw + p];
      dst[3 * p + 2] = src[2 * hw + p];
    }
    return;
  }
  for (std::int64_t p = p0; p < p1; ++p) {
    for (std::int64_t ch = 0; ch < c; ++ch) dst[p * c + ch] = src[ch * hw + p];
  }
}
ATVOSS_BUILT_TWICE(planes_to_pixels,
                   (const float* src, std::int64_t hw, std::int64_t c, float* dst, std::int64_t p0, std::int64_t p1),
                   (src, hw, c, dst, p0, p1))

}  // namespace

// Split over the pixels of every image (a model's input is one image at batch 1); more than
// three channels go through transpose's 16 x 16 tiles (a pixel's channels one plane apart each:
// read or written a float a plane, they took 4.8 ms for a 56 x 56 x 256 output).
void nchw_to_nhwc(const float* in, float* out, const Shape& s, int threads) {
  const std::int64_t n = s[0], c = s[1], hw = s[2] * s[3];
  const auto run = planes_to_pixels_here();
  const auto block = transpose_block_here();
  split(n * hw, rows_grain(c), threads, [&](std::int64_t q0, std::int64_t q1) {
    for (std::int64_t b = q0 / hw; b < n && b * hw < q1; ++b) {
      const std::int64_t p0 = std::max(q0 - b * hw, std::int64_t(0)), p1 = std::min(q1 - b * hw, hw);
      if (c == 3) {
        run(in + b * c * hw, hw, c, out + b * c * hw, p0, p1);
      } else {  // out[p][ch] = in[ch][p]: the block's rows are pixels
        block(in + b * c * hw + p0, hw, out + (b * hw + p0) * c, c, p1 - p0, c);
      }
    }
  });
}

namespace {

// rows of g x cg floats each, transposed to cg x g; two groups (ShuffleNet's) a loop of their
// own, which the compiler vectorizes with permutes.
ATVOSS_INLINE void shuffle_rows_body(const float* in, std::int64_t rows, std::int64_t g, std::int64_t cg, float* out) {
  const std::int64_t c = g * cg;
  for (std::int64_t p = 0; p < rows; ++p) {
    const float* src = in + p * c;
    float* dst = out + p * c;
    if (g == 2) {
      for (std::int64_t i = 0; i < cg; ++i) {
        dst[2 * i] = src[i];
        dst[2 * i + 1] = src[cg + i];
      }
      continue;
    }
    for (std::int64_t i = 0; i < cg; ++i) {
      for (std::int64_t j = 0; j < g; ++j) dst[i * g + j] = src[j * cg + i];
    }
  }
}
ATVOSS_BUILT_TWICE(shuffle_rows, (const float* in, std::int64_t rows, std::int64_t g, std::int64_t cg, float* out),
                   (in, rows, g, cg, out))

}  // namespace

void shuffle_channels(const float* in, std::int64_t pixels, std::int64_t g, std::int64_t cg, float* out, int threads) {
  const auto run = shuffle_rows_here();
  split(pixels, rows_grain(g * cg), threads,
        [&](std::int64_t p0, std::int64_t p1) { run(in + p0 * g * cg, p1 - p0, g, cg, out + p0 * g * cg); });
}

void nhwc_to_nchw(const float* in, float* out, const Shape& s, int threads) {
  const std::int64_t n = s[0], c = s[1], hw = s[2] * s[3];
  const auto block = transpose_block_here();
  split(n * hw, rows_grain(c), threads, [&](std::int64_t q0, std::int64_t q1) {
    for (std::int64_t b = q0 / hw; b < n && b * hw < q1; ++b) {
      const std::int64_t p0 = std::max(q0 - b * hw, std::int64_t(0)), p1 = std::min(q1 - b * hw, hw);
      // out[ch][p] = in[p][ch]: the block's rows are channels
      block(in + (b * hw + p0) * c, c, out + b * c * hw + p0, hw, c, p1 - p0);
    }
  });
}

bool unary(const std::string& op, const float* in, float* out, std::int64_t n, float alpha, float beta, int threads) {
  static const std::map<std::string, UnaryLoop> ops = {
      {"Relu", &unary_loop<decltype([](float x, float, float) { return x < 0 ? 0.0f : x; })>},  // NaN stays
      {"Sigmoid", &unary_loop<decltype([](float x, float, float) { return 1.0f / (1.0f + fast_exp(-x)); })>},
      {"Tanh", &unary_loop<decltype([](float x, float, float) { return std::tanh(x); })>},
      {"Exp", &unary_loop<decltype([](float x, float, float) { return std::exp(x); })>},  // exact: a model's own
      {"Log", &unary_loop<decltype([](float x, float, float) { return std::log(x); })>},
      {"Sqrt", &unary_loop<decltype([](float x, float, float) { return std::sqrt(x); })>},
      {"Neg", &unary_loop<decltype([](float x, float, float) { return -x; })>},
      {"Abs", &unary_loop<decltype([](float x, float, float) { return std::abs(x); })>},
      {"Erf", &unary_loop<decltype([](float x, float, float) { return fast_erf(x); })>},
      {"Reciprocal", &unary_loop<decltype([](float x, float, float) { return 1.0f / x; })>},
      {"Floor", &unary_loop<decltype([](float x, float, float) { return std::floor(x); })>},
      {"Ceil", &unary_loop<decltype([](float x, float, float) { return std::ceil(x); })>},
      {"Identity", &unary_loop<decltype([](float x, float, float) { return x; })>},
      {"Softplus", &unary_loop<decltype([](float x, float, float) { return std::log1p(std::exp(x)); })>},
      {"Softsign", &unary_loop<decltype([](float x, float, float) { return x / (1.0f + std::abs(x)); })>},
      {"HardSwish",
       &unary_loop<decltype([](float x, float, float) { return x * std::clamp(x / 6.0f + 0.5f, 0.0f, 1.0f); })>},
      // Casts of the values the engine holds as floats (engine/model.hpp).
      {"Trunc", &unary_loop<decltype([](float x, float, float) { return std::trunc(x); })>},
      {"NotZero", &unary_loop<decltype([](float x, float, float) { return x != 0.0f ? 1.0f : 0.0f; })>},
      {"Not", &unary_loop<decltype([](float x, float, float) { return x != 0.0f ? 0.0f : 1.0f; })>},
      // Pow by a constant 2 (a decomposed LayerNorm's variance): std::pow is 20x slower.
      {"Square", &unary_loop<decltype([](float x, float, float) { return x * x; })>},
      {"Gelu", &unary_loop<decltype([](float x, float, float) { return erf_gelu(x); })>},
      {"GeluTanh", &unary_loop<decltype([](float x, float, float) { return tanh_gelu(x); })>},
      {"LeakyRelu", &unary_loop<decltype([](float x, float a, float) { return x < 0 ? a * x : x; })>},
      {"Elu", &unary_loop<decltype([](float x, float a, float) { return x < 0 ? a * (std::exp(x) - 1.0f) : x; })>},
      {"HardSigmoid",
       &unary_loop<decltype([](float x, float a, float b) { return std::clamp(a * x + b, 0.0f, 1.0f); })>},
      {"Clip", &unary_loop<decltype([](float x, float lo, float hi) { return std::min(std::max(x, lo), hi); })>},
  };
  const auto it = ops.find(op);
  if (it == ops.end()) return false;
  if (in) it->second(in, out, n, alpha, beta, threads);
  return true;
}

bool binary_op(const std::string& op) { return binary_ops().count(op) > 0; }

void where(const float* cond, const Shape& sc, const float* a, const Shape& sa, const float* b, const Shape& sb,
           float* out, const Shape& so) {
  const std::size_t r = so.size();
  const auto tc = broadcast_strides(sc, r), ta = broadcast_strides(sa, r), tb = broadcast_strides(sb, r);
  std::vector<std::int64_t> index(r, 0);
  std::int64_t oc = 0, oa = 0, ob = 0;
  const std::int64_t n = elements(so);
  for (std::int64_t i = 0; i < n; ++i) {
    out[i] = !cond || cond[oc] != 0.0f ? a[oa] : b[ob];
    for (int d = int(r) - 1; d >= 0; --d) {  // an odometer over the output's index
      ++index[d];
      oc += tc[d], oa += ta[d], ob += tb[d];
      if (index[d] < so[d]) break;
      oc -= tc[d] * so[d], oa -= ta[d] * so[d], ob -= tb[d] * so[d];
      index[d] = 0;
    }
  }
}

bool binary(const std::string& op, const float* a, const Shape& sa, const float* b, const Shape& sb, float* out,
            const Shape& so, int threads) {
  const auto it = binary_ops().find(op);
  if (it == binary_ops().end() || !broadcasts_to(sa, so) || !broadcasts_to(sb, so)) return false;
  it->second({a, b, out, so, broadcast_strides(sa, so.size()), broadcast_strides(sb, so.size())}, threads);
  return true;
}

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

void concat(const std::vector<const float*>& in, const std::vector<Shape>& shapes, std::int64_t axis, float* out,
            bool nhwc, int threads) {
  // As [outer, dim_axis x inner] blocks: NHWC with axis 1 is [N x H x W, C] along the last.
  const Shape& s0 = shapes.front();
  std::int64_t outer = 1, inner = 1;
  if (nhwc) {
    outer = s0[0] * s0[2] * s0[3];
  } else {
    for (std::int64_t d = 0; d < axis; ++d) outer *= s0[d];
    for (std::size_t d = axis + 1; d < s0.size(); ++d) inner *= s0[d];
  }
  std::int64_t total = 0;
  for (const auto& s : shapes) total += s[axis] * inner;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::int64_t block = shapes[i][axis] * inner;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t o = 0; o < outer; ++o) std::copy_n(in[i] + o * block, block, out + o * total + offset);
    offset += block;
  }
}

void transpose(const float* in, const Shape& x, const std::vector<std::int64_t>& perm, float* out, int threads) {
  const std::size_t r = x.size();
  const std::int64_t n = elements(x);
  if (n == 0) return;
  if (r == 0) {
    out[0] = in[0];
    return;
  }
  std::vector<std::int64_t> in_strides(r, 1), out_shape(r), step(r), out_strides(r, 1);
  for (int d = int(r) - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * x[d + 1];
  for (std::size_t d = 0; d < r; ++d) {
    out_shape[d] = x[perm[d]];
    step[d] = in_strides[perm[d]];
  }
  for (int d = int(r) - 2; d >= 0; --d) out_strides[d] = out_strides[d + 1] * out_shape[d + 1];
  const std::int64_t inner = out_shape[r - 1], inner_step = step[r - 1];
  // The output dim that reads the input's contiguous last dim (none when that dim is the output's last too).
  std::size_t rows_dim = r;
  for (std::size_t d = 0; d + 1 < r; ++d) {
    if (perm[d] == std::int64_t(r) - 1 && x[r - 1] > 1) rows_dim = d;
  }
  Odometer outer;
  for (std::size_t d = 0; d + 1 < r; ++d) {
    if (d == rows_dim) continue;
    outer.size.push_back(out_shape[d]);
    outer.sa.push_back(step[d]);
    outer.sb.push_back(out_strides[d]);
  }
  std::int64_t count = 1;
  for (auto e : outer.size) count *= e;
  const std::int64_t per = n / count;  // elements per outer index
  const bool blocked = inner_step != 1 && rows_dim < r;
  const auto block = transpose_block_here();
  split(count, rows_grain(per), threads, [&](std::int64_t c0, std::int64_t c1) {
    Odometer o = outer;
    o.seek(c0);
    for (std::int64_t c = c0; c < c1; ++c, o.next()) {
      if (blocked) {
        block(in + o.a, inner_step, out + o.b, out_strides[rows_dim], out_shape[rows_dim], inner);
      } else {
        const float* src = in + o.a;
        float* dst = out + o.b;
        for (std::int64_t j = 0; j < inner; ++j) dst[j] = src[j * inner_step];
      }
    }
  });
}

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
  const Vec16 fn = __builtin_convertvector(n, Vec16);
  const Vec16 r = (x - fn * 0.693359375f) + fn * 2.12194440e-4f;
  Vec16 p = Vec16{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  Vec16 scale;
  const Vec16i bits = (n + 127) << 23;
  std::memcpy(&scale, &bits, sizeof scale);
  x = zero ? Vec16{} : (p * r * r + r + 1.0f) * scale;
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

void gather(const float* data, const Shape& x, const std::int64_t* indices, std::int64_t count, std::int64_t axis,
            float* out) {
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= x[d];
  for (std::size_t d = axis + 1; d < x.size(); ++d) inner *= x[d];
  const std::int64_t len = x[axis];
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t at = indices[i] < 0 ? indices[i] + len : indices[i];
      std::copy_n(data + (o * len + at) * inner, inner, out + (o * count + i) * inner);
    }
  }
}

bool gather_by(const float* data, const Shape& x, const float* indices, std::int64_t count, std::int64_t axis,
               float* out) {
  thread_local std::vector<std::int64_t> ids;
  ids.resize(std::size_t(count));
  const float len = float(x[axis]);
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = indices[i];
    if (!(v >= -len && v < len) || std::trunc(v) != v) return false;
    ids[std::size_t(i)] = std::int64_t(v);
  }
  gather(data, x, ids.data(), count, axis, out);
  return true;
}

// The trailing dims taken whole at step 1, and the one before them at step 1, are one
// contiguous run of input a copy each; with none, the last dim is walked at its step. The runs
// count like an odometer, split over the threads (a Split of ShuffleNet's channels took 95 us
// an output read element by element).
void strided_slice(const float* in, const Shape& x, const std::vector<std::int64_t>& starts,
                   const std::vector<std::int64_t>& steps, float* out, const Shape& y, int threads) {
  const std::size_t r = x.size();
  if (elements(y) == 0) return;
  if (r == 0) {
    out[0] = in[0];
    return;
  }
  std::vector<std::int64_t> stride(r, 1), out_stride(r, 1);
  for (int d = int(r) - 2; d >= 0; --d) {
    stride[d] = stride[d + 1] * x[d + 1];
    out_stride[d] = out_stride[d + 1] * y[d + 1];
  }
  std::int64_t src = 0;
  for (std::size_t d = 0; d < r; ++d) src += starts[d] * stride[d];
  std::size_t d = r;
  std::int64_t run = 1;
  while (d > 0 && steps[d - 1] == 1 && y[d - 1] == x[d - 1]) run *= y[--d];
  if (d > 0 && steps[d - 1] == 1) run *= y[--d];
  const bool contiguous = d < r;
  const std::int64_t len = contiguous ? run : y[r - 1], step = contiguous ? 1 : steps[r - 1];
  if (!contiguous) d = r - 1;
  Odometer outer;
  for (std::size_t k = 0; k < d; ++k) {
    outer.size.push_back(y[k]);
    outer.sa.push_back(steps[k] * stride[k]);
    outer.sb.push_back(out_stride[k]);
  }
  const std::int64_t count = elements(y) / len;
  split(count, rows_grain(len), threads, [&](std::int64_t c0, std::int64_t c1) {
    Odometer o = outer;
    o.seek(c0);
    for (std::int64_t c = c0; c < c1; ++c, o.next()) {
      const float* from = in + src + o.a;
      float* to = out + o.b;
      if (contiguous) {
        std::copy_n(from, len, to);
      } else {
        for (std::int64_t j = 0; j < len; ++j) to[j] = from[j * step];
      }
    }
  });
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

bool reduce(const std::string& op, const float* in, const Shape& x, const std::vector<bool>& reduced, float* out) {
  const bool mean = op == "ReduceMean", sum = op == "ReduceSum", mx = op == "ReduceMax", mn = op == "ReduceMin";
  const bool prod = op == "ReduceProd";
  if (!mean && !sum && !mx && !mn && !prod) return false;
  const std::size_t r = x.size();
  Shape y = x;
  std::int64_t count = 1;
  for (std::size_t d = 0; d < r; ++d) {
    if (reduced[d]) count *= x[d], y[d] = 1;
  }
  const std::int64_t ny = elements(y);
  if (count > 1 && reduces_trailing_axes(reduced) && !prod) {  // rows (a LayerNorm's mean): vectorized
    for (std::int64_t k = 0; k < ny; ++k) out[k] = reduce_row(in + k * count, count, mean, mx, mn);
    return true;
  }
  const auto ys = broadcast_strides(y, r);  // the output offset of each input index
  std::vector<double> acc(std::size_t(ny), mx     ? -std::numeric_limits<double>::infinity()
                                           : mn   ? std::numeric_limits<double>::infinity()
                                           : prod ? 1.0
                                                  : 0.0);
  std::vector<std::int64_t> index(r, 0);
  std::int64_t o = 0;
  for (std::int64_t i = 0; i < elements(x); ++i) {
    const double v = in[i];
    double& a = acc[std::size_t(o)];
    a = mx ? std::max(a, v) : mn ? std::min(a, v) : prod ? a * v : a + v;
    advance(index, x, ys, o);
  }
  for (std::int64_t k = 0; k < ny; ++k) out[k] = float(mean ? acc[k] / double(count) : acc[k]);
  return true;
}

void pad(const float* in, const Shape& x, const std::vector<std::int64_t>& before, PadMode mode, float value,
         float* out, const Shape& y) {
  const std::size_t r = y.size();
  std::vector<std::int64_t> in_stride(r, 1), index(r, 0);
  for (int d = int(r) - 2; d >= 0; --d) in_stride[d] = in_stride[d + 1] * x[d + 1];
  const std::int64_t n = elements(y);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t src = 0;
    bool inside = true;
    for (std::size_t d = 0; d < r && inside; ++d) {
      std::int64_t at = index[d] - before[d];
      if (mode == PadMode::edge) at = std::clamp<std::int64_t>(at, 0, x[d] - 1);
      if (mode == PadMode::reflect && x[d] > 1) {  // mirrored about the edge, the edge once
        const std::int64_t period = 2 * (x[d] - 1);
        at = ((at % period) + period) % period;
        if (at >= x[d]) at = period - at;
      }
      inside = at >= 0 && at < x[d];
      src += at * in_stride[d];
    }
    out[i] = inside ? in[src] : value;
    for (int d = int(r) - 1; d >= 0; --d) {
      if (++index[d] < y[d]) break;
      index[d] = 0;
    }
  }
}

void tile(const float* x, const Shape& xs, float* y, const Shape& ys) {
  const std::size_t r = ys.size();
  std::vector<std::int64_t> stride(r, 1), index(r, 0);
  for (int d = int(r) - 2; d >= 0; --d) stride[d] = stride[d + 1] * xs[d + 1];
  const std::int64_t n = elements(ys);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t src = 0;
    for (std::size_t d = 0; d < r; ++d) src += index[d] % xs[d] * stride[d];
    y[i] = x[src];
    for (int d = int(r) - 1; d >= 0; --d) {
      if (++index[d] < ys[d]) break;
      index[d] = 0;
    }
  }
}

void instance_norm(const float* x, const Shape& xs, const float* scale, const float* bias, float epsilon, float* y) {
  const std::int64_t planes = xs[0] * xs[1], c = xs[1], len = elements(xs) / std::max<std::int64_t>(planes, 1);
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* src = x + p * len;
    float* dst = y + p * len;
    const auto [mean, inv] = moments(src, len, epsilon);
    for (std::int64_t k = 0; k < len; ++k) dst[k] = float((src[k] - mean) * inv * scale[p % c] + bias[p % c]);
  }
}

namespace {

// The input coordinate of output coordinate o along a dim of in -> out with scale s (ONNX's
// coordinate_transformation_mode).
double source_coordinate(const std::string& mode, std::int64_t o, std::int64_t in, std::int64_t out, double s) {
  if (mode == "align_corners") return out > 1 ? double(o) * double(in - 1) / double(out - 1) : 0.0;
  if (mode == "asymmetric") return double(o) / s;
  if (mode == "pytorch_half_pixel") return out > 1 ? (double(o) + 0.5) / s - 0.5 : 0.0;
  return (double(o) + 0.5) / s - 0.5;  // half_pixel
}

std::int64_t nearest_index(const std::string& mode, double v, std::int64_t in) {
  double i = 0;
  if (mode == "floor")
    i = std::floor(v);
  else if (mode == "ceil")
    i = std::ceil(v);
  else if (mode == "round_prefer_ceil")
    i = std::floor(v + 0.5);
  else
    i = v == std::floor(v) + 0.5 ? std::floor(v) : std::round(v);  // round_prefer_floor
  return std::clamp<std::int64_t>(std::int64_t(i), 0, in - 1);
}

}  // namespace

namespace {

// Where output index o of an axis reads: two input indices and the second's weight (linear),
// or one index twice (nearest).
struct AxisTap {
  std::int64_t i0 = 0, i1 = 0;
  float f = 0;
};
AxisTap axis_tap(const ResizeAttrs& a, std::int64_t o, std::int64_t in, std::int64_t out, float scale) {
  const double v = source_coordinate(a.coordinates, o, in, out, scale);
  if (!a.linear) {
    const std::int64_t i = nearest_index(a.nearest, v, in);
    return {i, i, 0.0f};
  }
  const double c = std::clamp(v, 0.0, double(in - 1));
  const std::int64_t i0 = std::int64_t(c);
  return {i0, std::min(i0 + 1, in - 1), float(c - double(i0))};
}

// One output pixel of c channels from its four input pixels (rows r0, r1, columns c0, c1).
ATVOSS_INLINE void blend_pixel_body(const float* p00, const float* p01, const float* p10, const float* p11, float fx,
                                    float fy, std::int64_t c, float* dst) {
  for (std::int64_t k = 0; k < c; ++k) {
    const float top = p00[k] + (p01[k] - p00[k]) * fx, bottom = p10[k] + (p11[k] - p10[k]) * fx;
    dst[k] = top + (bottom - top) * fy;
  }
}
ATVOSS_BUILT_TWICE(blend_pixel,
                   (const float* p00, const float* p01, const float* p10, const float* p11, float fx, float fy,
                    std::int64_t c, float* dst),
                   (p00, p01, p10, p11, fx, fy, c, dst))

}  // namespace

// Output rows split over the threads; in NHWC each output pixel is its input pixels' c
// channels copied or blended in one contiguous run (YOLO's 2x nearest upsample took 4.3 ms in
// ONNX order with its two layout changes).
void resize(const float* x, const Shape& xs, float* y, const Shape& ys, const ResizeAttrs& a, bool nhwc, int threads) {
  const std::int64_t c = nhwc ? xs[1] : 1, images = nhwc ? xs[0] : xs[0] * xs[1];
  const std::int64_t h = xs[2], w = xs[3], oh = ys[2], ow = ys[3];
  const auto blend = blend_pixel_here();
  split(images * oh, rows_grain(ow * c), threads, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const AxisTap ty = axis_tap(a, r % oh, h, oh, a.scale_h);
      const float* src = x + r / oh * h * w * c;
      float* dst = y + r * ow * c;
      for (std::int64_t j = 0; j < ow; ++j) {
        const AxisTap tx = axis_tap(a, j, w, ow, a.scale_w);
        const float* p00 = src + (ty.i0 * w + tx.i0) * c;
        if (!a.linear) {
          std::copy_n(p00, c, dst + j * c);
          continue;
        }
        blend(p00, src + (ty.i0 * w + tx.i1) * c, src + (ty.i1 * w + tx.i0) * c, src + (ty.i1 * w + tx.i1) * c, tx.f,
              ty.f, c, dst + j * c);
      }
    }
  });
}

void gemm(const float* a, const float* b, const float* c, const Shape& cs, float* y, std::int64_t m, std::int64_t n,
          std::int64_t k, bool trans_a, bool trans_b, float alpha, float beta) {
  const auto cst = broadcast_strides(cs, 2);
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
