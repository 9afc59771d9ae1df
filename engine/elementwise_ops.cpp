// The plain elementwise ops (plain_ops.hpp): unary ops, Where, and binary ops with numpy
// broadcasting, each op's loop instantiated on its own so that it inlines and vectorizes.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <mutex>

#include "engine/internal/plain_helpers.hpp"
#include "engine/plain_ops.hpp"
#include "engine/vector_build.hpp"

namespace atvoss::engine {
namespace {

using namespace loops;

using plain::broadcast_strides;
using plain::Odometer;

bool broadcasts_to(const Shape& s, const Shape& out) {
  if (s.size() > out.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::int64_t d = s[s.size() - 1 - i], o = out[out.size() - 1 - i];
    if (d != o && d != 1) return false;
  }
  return true;
}

// so and each operand's strides along it with the dims of size 1 dropped and each pair of
// neighbours that every operand reads contiguously (or not at all) merged into one: a
// broadcast over a middle dim (Swin's shift mask over the heads) then runs in rows as long as
// all its inner dims together, not as long as the last one.
void coalesce(Shape& so, std::initializer_list<std::vector<std::int64_t>*> strides) {
  Shape shape;
  std::vector<std::vector<std::int64_t>> kept(strides.size());
  for (std::size_t d = 0; d < so.size(); ++d) {
    if (so[d] == 1) continue;
    bool merges = !shape.empty();
    std::size_t k = 0;
    for (const auto* t : strides) merges = merges && kept[k++].back() == (*t)[d] * so[d];
    k = 0;
    for (const auto* t : strides) {
      if (merges) {
        kept[k++].back() = (*t)[d];
      } else {
        kept[k++].push_back((*t)[d]);
      }
    }
    if (merges) {
      shape.back() *= so[d];
    } else {
      shape.push_back(so[d]);
    }
  }
  so = std::move(shape);
  std::size_t k = 0;
  for (auto* t : strides) *t = std::move(kept[k++]);
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
      // Mod: fmod 0 (integers) takes the divisor's sign, as Python's %; fmod 1 the dividend's, as C's.
      {"Mod", &binary_loop<decltype([](float x, float y) {
         const float r = std::fmod(x, y);
         return r != 0.0f && (r < 0.0f) != (y < 0.0f) ? r + y : r;
       })>},
      {"FMod", &binary_loop<decltype([](float x, float y) { return std::fmod(x, y); })>},
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
  float e;
  plain::exp_of_reduced(x, float(n), e);
  return e * std::bit_cast<float>((n + 127) << 23) * keep;
}

// erf(x) by Abramowitz and Stegun's 7.1.26 (absolute error below 1.5e-7), vectorizable as
// fast_exp is; the engine's outputs are checked against ONNX Runtime within 1e-4.
inline float fast_erf(float x) {
  const float a = std::abs(x), t = 1.0f / (1.0f + 0.3275911f * a);
  const float poly =
      t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  return std::copysign(1.0f - poly * fast_exp(-a * a), x);
}

// tanh(x), vectorizable as fast_exp is (std::tanh is a call per element: Tanh took 15 % of a
// GPT-2 run): 1 - 2 / (e^2|x| + 1) with x's sign, which loses digits near 0, so below |x| of
// 0.625 Cephes' odd polynomial (relative error about 2e-7); |x| clamped at 10 (tanh is 1 in float
// from 9.01 on). The two are blended by arithmetic, not chosen by a branch: GCC would not run
// fast_exp's float-to-int conversion on a branch not taken, and left the loop scalar. NaN
// stays NaN.
inline float fast_tanh(float x) {
  const float a = std::min(std::abs(x), 10.0f), c = std::copysign(a, x), z = c * c;
  const float p =
      ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z -
       3.33332819422e-1f) *
          z * c +
      c;
  const float far = std::copysign(1.0f - 2.0f / (fast_exp(2.0f * a) + 1.0f), x);
  const float near = a < 0.625f ? 1.0f : 0.0f;
  return near * p + (1.0f - near) * far;
}

float erf_gelu(float x) { return 0.5f * x * (1.0f + fast_erf(x * 0.70710678118654752f)); }
float tanh_gelu(float x) { return 0.5f * x * (1.0f + fast_tanh(0.7978845608028654f * (x + 0.044715f * x * x * x))); }

}  // namespace

bool unary(const std::string& op, const float* in, float* out, std::int64_t n, float alpha, float beta, int threads) {
  static const std::map<std::string, UnaryLoop> ops = {
      {"Relu", &unary_loop<decltype([](float x, float, float) { return x < 0 ? 0.0f : x; })>},  // NaN stays
      {"Sigmoid", &unary_loop<decltype([](float x, float, float) { return 1.0f / (1.0f + fast_exp(-x)); })>},
      {"Tanh", &unary_loop<decltype([](float x, float, float) { return fast_tanh(x); })>},
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
      // Mish (YOLOv4's): x tanh(softplus(x)), softplus taken as x where exp(x) would overflow.
      {"Mish", &unary_loop<decltype(
                   [](float x, float, float) { return x * std::tanh(x > 20.0f ? x : std::log1p(std::exp(x))); })>},
      // alpha and gamma (beta here) as ONNX's Selu; alpha the threshold of ThresholdedRelu and Celu's.
      {"Selu",
       &unary_loop<decltype([](float x, float a, float g) { return g * (x > 0 ? x : a * (std::exp(x) - 1.0f)); })>},
      // Shrink's lambd and bias.
      {"Shrink",
       &unary_loop<decltype([](float x, float l, float b) { return x < -l  ? x + b
                                                                   : x > l ? x - b
                                                                           : 0.0f; })>},
      // The experimental ops of opsets 1 to 9 (ONNX Runtime still runs them), alpha and beta theirs.
      {"ScaledTanh", &unary_loop<decltype([](float x, float a, float b) { return a * std::tanh(b * x); })>},
      {"Affine", &unary_loop<decltype([](float x, float a, float b) { return a * x + b; })>},
      {"ParametricSoftplus",
       &unary_loop<decltype([](float x, float a, float b) { return a * std::log1p(std::exp(b * x)); })>},
      {"ThresholdedRelu", &unary_loop<decltype([](float x, float a, float) { return x > a ? x : 0.0f; })>},
      {"Celu", &unary_loop<decltype([](float x, float a, float) {
         return std::max(0.0f, x) + std::min(0.0f, a * (std::exp(x / a) - 1.0f));
       })>},
      // Position encodings computed in the graph (sinusoids), and their kin.
      {"Sin", &unary_loop<decltype([](float x, float, float) { return std::sin(x); })>},
      {"Cos", &unary_loop<decltype([](float x, float, float) { return std::cos(x); })>},
      {"Tan", &unary_loop<decltype([](float x, float, float) { return std::tan(x); })>},
      {"Asin", &unary_loop<decltype([](float x, float, float) { return std::asin(x); })>},
      {"Acos", &unary_loop<decltype([](float x, float, float) { return std::acos(x); })>},
      {"Atan", &unary_loop<decltype([](float x, float, float) { return std::atan(x); })>},
      {"Sinh", &unary_loop<decltype([](float x, float, float) { return std::sinh(x); })>},
      {"Cosh", &unary_loop<decltype([](float x, float, float) { return std::cosh(x); })>},
      {"Asinh", &unary_loop<decltype([](float x, float, float) { return std::asinh(x); })>},
      {"Acosh", &unary_loop<decltype([](float x, float, float) { return std::acosh(x); })>},
      {"Atanh", &unary_loop<decltype([](float x, float, float) { return std::atanh(x); })>},
      {"Sign", &unary_loop<decltype([](float x, float, float) { return float((x > 0) - (x < 0)); })>},
      // ONNX rounds halves to even: the default rounding mode's nearbyint.
      {"Round", &unary_loop<decltype([](float x, float, float) { return std::nearbyint(x); })>},
      {"IsNaN", &unary_loop<decltype([](float x, float, float) { return std::isnan(x) ? 1.0f : 0.0f; })>},
      // alpha: detect_negative, beta: detect_positive (0 or 1).
      {"IsInf", &unary_loop<decltype([](float x, float neg, float pos) {
         return std::isinf(x) && (x < 0 ? neg != 0.0f : pos != 0.0f) ? 1.0f : 0.0f;
       })>},
      // Casts of the values the engine holds as floats (engine/model.hpp).
      {"Trunc", &unary_loop<decltype([](float x, float, float) { return std::trunc(x); })>},
      // A cast to an integer type of alpha values from beta up (a uint8's 256 from 0): truncated
      // toward zero, then wrapped into the type's range, as C++'s conversions of integers wrap.
      {"TruncWrap", &unary_loop<decltype([](float x, float count, float low) {
         const float t = std::trunc(x) - low;
         return t - count * std::floor(t / count) + low;
       })>},
      {"NotZero", &unary_loop<decltype([](float x, float, float) { return x != 0.0f ? 1.0f : 0.0f; })>},
      {"Not", &unary_loop<decltype([](float x, float, float) { return x != 0.0f ? 0.0f : 1.0f; })>},
      // Pow by a constant 2 (a decomposed LayerNorm's variance): std::pow is 20x slower.
      {"Square", &unary_loop<decltype([](float x, float, float) { return x * x; })>},
      {"Cube", &unary_loop<decltype([](float x, float, float) { return x * x * x; })>},  // GPT-2's GELU
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
           float* out, const Shape& shape, int threads) {
  if (elements(shape) == 0) return;
  Shape so = shape;
  auto tc = broadcast_strides(sc, so.size()), ta = broadcast_strides(sa, so.size()),
       tb = broadcast_strides(sb, so.size());
  coalesce(so, {&tc, &ta, &tb});
  const std::size_t r = so.size();
  const std::int64_t n = elements(so), inner = r ? so[r - 1] : 1;
  const std::int64_t ic = r ? tc[r - 1] : 0, ia = r ? ta[r - 1] : 0, ib = r ? tb[r - 1] : 0;
  // Rows (every dim but the last) split among the threads, each operand's row offset counted by
  // an odometer (cond and a on one, b on another), and each row one loop along the last dim.
  split(n / inner, rows_grain(inner), threads, [&](std::int64_t r0, std::int64_t r1) {
    Odometer ca, bo;
    ca.size.assign(so.begin(), so.end() - (r ? 1 : 0));
    bo.size = ca.size;
    ca.sa.assign(tc.begin(), tc.begin() + std::ptrdiff_t(ca.size.size()));
    ca.sb.assign(ta.begin(), ta.begin() + std::ptrdiff_t(ca.size.size()));
    bo.sa.assign(tb.begin(), tb.begin() + std::ptrdiff_t(ca.size.size()));
    bo.sb.assign(ca.size.size(), 0);
    ca.seek(r0);
    bo.seek(r0);
    for (std::int64_t row = r0; row < r1; ++row, ca.next(), bo.next()) {
      const float *c = cond ? cond + ca.a : nullptr, *x = a + ca.b, *y = b + bo.a;
      float* o = out + row * inner;
      for (std::int64_t j = 0; j < inner; ++j) o[j] = !c || c[j * ic] != 0.0f ? x[j * ia] : y[j * ib];
    }
  });
}

bool binary(const std::string& op, const float* a, const Shape& sa, const float* b, const Shape& sb, float* out,
            const Shape& so, int threads) {
  const auto it = binary_ops().find(op);
  if (it == binary_ops().end() || !broadcasts_to(sa, so) || !broadcasts_to(sb, so)) return false;
  Broadcast x{a, b, out, so, broadcast_strides(sa, so.size()), broadcast_strides(sb, so.size())};
  coalesce(x.so, {&x.ta, &x.tb});
  it->second(x, threads);
  return true;
}

namespace {

// y = clamp(nearbyint(x / scale) + zero, low, high) over n values of one scale and zero point,
// or (s, z not null: channels last) of scale s[j] and zero point z[j] each.
// With round_trip, the quantized value's dequantization, (q - zero) * scale.
template <bool round_trip>
ATVOSS_INLINE void quantize_values(const float* x, std::int64_t n, float scale, float zero, const float* s,
                                   const float* z, float low, float high, float* y) {
  if (s) {
    for (std::int64_t j = 0; j < n; ++j) {
      const float q = std::min(std::max(std::nearbyint(x[j] / s[j]) + z[j], low), high);
      y[j] = round_trip ? (q - z[j]) * s[j] : q;
    }
  } else {
    for (std::int64_t j = 0; j < n; ++j) {
      const float q = std::min(std::max(std::nearbyint(x[j] / scale) + zero, low), high);
      y[j] = round_trip ? (q - zero) * scale : q;
    }
  }
}
ATVOSS_INLINE void quantize_run_body(const float* x, std::int64_t n, float scale, float zero, const float* s,
                                     const float* z, float low, float high, bool round_trip, float* y) {
  if (round_trip) {
    quantize_values<true>(x, n, scale, zero, s, z, low, high, y);
  } else {
    quantize_values<false>(x, n, scale, zero, s, z, low, high, y);
  }
}
ATVOSS_BUILT_TWICE(quantize_run,
                   (const float* x, std::int64_t n, float scale, float zero, const float* s, const float* z, float low,
                    float high, bool round_trip, float* y),
                   (x, n, scale, zero, s, z, low, high, round_trip, y))

// y = (x - zero) * scale, as quantize_run reads its scales and zero points.
ATVOSS_INLINE void dequantize_run_body(const float* x, std::int64_t n, float scale, float zero, const float* s,
                                       const float* z, float* y) {
  if (s) {
    for (std::int64_t j = 0; j < n; ++j) y[j] = (x[j] - z[j]) * s[j];
  } else {
    for (std::int64_t j = 0; j < n; ++j) y[j] = (x[j] - zero) * scale;
  }
}
ATVOSS_BUILT_TWICE(dequantize_run,
                   (const float* x, std::int64_t n, float scale, float zero, const float* s, const float* z, float* y),
                   (x, n, scale, zero, s, z, y))

// Values on the grid are (q - zero) * scale to a rounding, so x * inverse + zero is q to well
// within a half: truncating v + 1/2 (v >= 0) rounds it.
ATVOSS_INLINE void grid_codes_run_body(const float* x, std::int64_t n, float inverse, float zero, std::uint8_t* q) {
  for (std::int64_t j = 0; j < n; ++j) {
    const float v = std::min(std::max(x[j] * inverse + zero, 0.0f), 255.0f);
    q[j] = std::uint8_t(int(v + 0.5f));
  }
}
ATVOSS_BUILT_TWICE(grid_codes_run, (const float* x, std::int64_t n, float inverse, float zero, std::uint8_t* q),
                   (x, n, inverse, zero, q))

// f(begin, length, channel) over runs of x that share a scale (channel -1: a row of every
// channel, channels last), split over the threads.
template <class F>
void quantization_runs(std::int64_t n, const Quantization& q, int threads, F f) {
  if (q.count == 1) {
    split(n, kGrain, threads, [&](std::int64_t i0, std::int64_t i1) { f(i0, i1 - i0, 0); });
  } else if (q.inner == 1) {
    split(n / q.count, rows_grain(q.count), threads, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) f(r * q.count, q.count, -1);
    });
  } else {
    split(n / q.inner, rows_grain(q.inner), threads, [&](std::int64_t b0, std::int64_t b1) {
      for (std::int64_t b = b0; b < b1; ++b) f(b * q.inner, q.inner, b % q.count);
    });
  }
}

}  // namespace

void quantize_linear(const float* x, std::int64_t n, const Quantization& q, float* y, int threads) {
  const auto run = quantize_run_here();
  quantization_runs(n, q, threads, [&](std::int64_t at, std::int64_t len, std::int64_t c) {
    if (c >= 0) return run(x + at, len, q.scale[c], q.zero[c], nullptr, nullptr, q.low, q.high, q.round_trip, y + at);
    run(x + at, len, 0, 0, q.scale, q.zero, q.low, q.high, q.round_trip, y + at);
  });
}

void dequantize_linear(const float* x, std::int64_t n, const Quantization& q, float* y, int threads) {
  const auto run = dequantize_run_here();
  quantization_runs(n, q, threads, [&](std::int64_t at, std::int64_t len, std::int64_t c) {
    if (c >= 0) return run(x + at, len, q.scale[c], q.zero[c], nullptr, nullptr, y + at);
    run(x + at, len, 0, 0, q.scale, q.zero, y + at);
  });
}

void grid_codes(const float* x, std::int64_t n, float scale, int zero, std::uint8_t* q, int threads) {
  const auto run = grid_codes_run_here();
  split(n, kGrain, threads,
        [&](std::int64_t i0, std::int64_t i1) { run(x + i0, i1 - i0, 1.0f / scale, float(zero), q + i0); });
}

void grid_codes_strided(const float* x, const Shape& nhwc, std::int64_t stride, float scale, int zero, std::uint8_t* q,
                        int threads) {
  const auto run = grid_codes_run_here();
  const std::int64_t h = nhwc[1], w = nhwc[2], c = nhwc[3];
  const std::int64_t oh = (h - 1) / stride + 1, ow = (w - 1) / stride + 1;
  const float inverse = 1.0f / scale;
  split(nhwc[0] * oh * ow, rows_grain(c), threads, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      const std::int64_t n = p / (oh * ow), y = p / ow % oh, xo = p % ow;
      run(x + ((n * h + y * stride) * w + xo * stride) * c, c, inverse, float(zero), q + p * c);
    }
  });
}

namespace {

// lo and hi widened to hold x's n values, in lanes the compiler keeps in vectors.
ATVOSS_INLINE void widen_range_body(const float* x, std::int64_t n, float* lo, float* hi) {
  constexpr int kLanes = 16;
  float l[kLanes], h[kLanes];
  for (int j = 0; j < kLanes; ++j) l[j] = *lo, h[j] = *hi;
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      l[j] = x[i + j] < l[j] ? x[i + j] : l[j];
      h[j] = x[i + j] > h[j] ? x[i + j] : h[j];
    }
  }
  for (; i < n; ++i) l[0] = std::min(l[0], x[i]), h[0] = std::max(h[0], x[i]);
  for (int j = 0; j < kLanes; ++j) *lo = std::min(*lo, l[j]), *hi = std::max(*hi, h[j]);
}
ATVOSS_BUILT_TWICE(widen_range, (const float* x, std::int64_t n, float* lo, float* hi), (x, n, lo, hi))

}  // namespace

void dynamic_quantize_linear(const float* x, std::int64_t n, float* y, float* scale, float* zero, int threads) {
  float low = 0, high = 0;  // the range holds 0
  const auto widen = widen_range_here();
  std::mutex merge;
  split(n, kGrain, threads, [&](std::int64_t i0, std::int64_t i1) {
    float lo = 0, hi = 0;
    widen(x + i0, i1 - i0, &lo, &hi);
    const std::lock_guard<std::mutex> hold(merge);
    low = std::min(low, lo), high = std::max(high, hi);
  });
  *scale = high == low ? 1.0f : (high - low) / 255.0f;
  *zero = std::nearbyint(std::clamp(0.0f - low / *scale, 0.0f, 255.0f));
  Quantization q;
  q.scale = scale;
  q.zero = zero;
  quantize_linear(x, n, q, y, threads);
}

}  // namespace atvoss::engine
