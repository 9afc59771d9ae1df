#include "host/reference_conv.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "host/low_precision.hpp"

namespace atvoss::host {
namespace {

struct ConvDims {
  std::int64_t n, c, h, w, k, r, s, stride, pad, oh, ow;
  bool depthwise;
  std::int64_t kout() const { return depthwise ? c : k; }
  std::int64_t weights() const { return depthwise ? r * s * c : r * s * c * k; }
};

ConvDims dims_of(const Workload& w) {
  if (w.op() != "conv2d" && w.op() != "depthwise_conv2d") {
    throw_bad_input("host: op '" + w.op() + "' is not conv2d or depthwise_conv2d");
  }
  const bool dw = w.op() == "depthwise_conv2d";
  return {w.dim("N"), w.dim("C"),      w.dim("H"),   w.dim("W"), dw ? 1 : w.dim("K"), w.dim("R"),
          w.dim("S"), w.dim("stride"), w.dim("pad"), w.out_h(),  w.out_w(),           dw};
}

// Output pixels (n, oh, ow flattened) to check.
std::vector<std::int64_t> pixels_to_check(const ConvDims& d, double macs, std::uint64_t seed) {
  const std::int64_t count = d.n * d.oh * d.ow;
  std::vector<std::int64_t> out;
  if (macs <= double(1 << 26)) {
    for (std::int64_t p = 0; p < count; ++p) out.push_back(p);
    return out;
  }
  std::set<std::int64_t> picked;
  for (std::int64_t i = 0; i < std::min<std::int64_t>(8, count); ++i) {
    picked.insert(i);
    picked.insert(count - 1 - i);
  }
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::uniform_int_distribution<std::int64_t> any(0, count - 1);
  for (int i = 0; i < 32; ++i) picked.insert(any(rng));
  return {picked.begin(), picked.end()};
}

}  // namespace

Operands make_conv_operands(const Workload& w, std::uint64_t seed) {
  const ConvDims d = dims_of(w);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), positive(0.5f, 1.5f);
  auto fill = [&](std::int64_t n, auto& dist) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (auto& x : v) x = dist(rng);
    return v;
  };
  const std::int64_t out = d.n * d.oh * d.ow * d.kout();
  Operands o;
  o.a = fill(d.n * d.h * d.w * d.c, unit);
  o.b = fill(d.weights(), unit);
  o.c.assign(static_cast<std::size_t>(out), 0.0f);
  if (w.has_epilogue("bias")) o.bias = fill(d.kout(), unit);
  if (w.has_epilogue("leaky_relu")) o.slope = fill(d.kout(), unit);
  if (w.has_epilogue("batchnorm")) {
    o.scale = fill(d.kout(), positive);
    o.shift = fill(d.kout(), unit);
  }
  if (w.has_epilogue("add")) o.residual = fill(out, unit);
  o.qout = output_grid(w);
  if (w.dtype() != DType::float32) quantize_operands(w, -1.0f, 1.0f, o);
  return o;
}

double conv_max_relative_error(const Workload& w, const Operands& o, std::uint64_t seed) {
  const ConvDims d = dims_of(w);
  const double macs =
      double(d.n * d.oh * d.ow) * double(d.kout()) * double(d.r * d.s) * (d.depthwise ? 1.0 : double(d.c));
  const std::int64_t kout = d.kout();
  std::vector<double> acc(static_cast<std::size_t>(kout));
  const double forgiven = grid_steps(o.qout);  // as max_relative_error
  double worst = 0;
  for (const std::int64_t p : pixels_to_check(d, macs, seed)) {
    const std::int64_t n = p / (d.oh * d.ow), oh = p / d.ow % d.oh, ow = p % d.ow;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (std::int64_t r = 0; r < d.r; ++r) {
      const std::int64_t ih = oh * d.stride - d.pad + r;
      if (ih < 0 || ih >= d.h) continue;
      for (std::int64_t s = 0; s < d.s; ++s) {
        const std::int64_t iw = ow * d.stride - d.pad + s;
        if (iw < 0 || iw >= d.w) continue;
        const float* in = o.a.data() + ((n * d.h + ih) * d.w + iw) * d.c;
        if (d.depthwise) {
          const float* wt = o.b.data() + (r * d.s + s) * d.c;
          for (std::int64_t c = 0; c < d.c; ++c) acc[std::size_t(c)] += double(in[c]) * double(wt[c]);
          continue;
        }
        for (std::int64_t c = 0; c < d.c; ++c) {
          const double x = in[c];
          const float* wt = o.b.data() + ((r * d.s + s) * d.c + c) * d.k;
          for (std::int64_t k = 0; k < d.k; ++k) acc[std::size_t(k)] += x * double(wt[k]);
        }
      }
    }
    for (std::int64_t k = 0; k < kout; ++k) {
      const std::size_t at = std::size_t(p * kout + k);
      const double ref = apply_epilogue(w, o, acc[std::size_t(k)], std::size_t(k), at);
      const double got = o.c[at];
      if (!std::isfinite(got)) return INFINITY;
      worst = std::max(worst, std::max(0.0, std::abs(got - ref) - forgiven) / std::max(std::abs(ref), 1.0));
    }
  }
  return worst;
}

}  // namespace atvoss::host
