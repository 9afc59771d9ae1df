#include "runtime/sensitivity.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <span>

#include "core/error.hpp"
#include "host/host_space.hpp"
#include "host/low_precision.hpp"
#include "host/machine.hpp"

namespace atvoss::runtime {

double LayerSensitivity::error(DType d) const {
  return d == DType::int8 ? int8_error : d == DType::bfloat16 ? bf16_error : 0.0;
}

double LayerSensitivity::time_us(DType d) const {
  return d == DType::int8 ? int8_us : d == DType::bfloat16 ? bf16_us : fp32_us;
}

namespace {

// Transformer activations: mostly unit-scale, a few values an order of magnitude larger. Rare
// enough that a small batch often holds none (then clipping them in calibration pays), common
// enough that a large one holds several (then clipping costs more than it saves).
constexpr double kOutlierShare = 1e-4;
constexpr float kOutlierScale = 10;
constexpr double kSmall = 0.05;  // std of bias, batchnorm shift and scale's deviation from 1

// Independent seeded streams per layer and purpose, so that adding a layer or an epilogue
// operand does not shift the others' numbers.
enum class Stream : std::uint64_t { weights = 1, bias, bn_scale, bn_shift, residual, eval_input, calib_input };

std::mt19937_64 rng(std::uint64_t seed, std::size_t layer, Stream s) {
  std::uint64_t x = seed ^ (std::uint64_t(layer) << 32) ^ (std::uint64_t(s) << 56);
  x += 0x9e3779b97f4a7c15ull;  // splitmix64's finaliser: nearby seeds give unrelated streams
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return std::mt19937_64(x ^ (x >> 31));
}

std::vector<float> normal(std::size_t n, double mean, double stddev, std::mt19937_64 g) {
  std::normal_distribution<double> d(mean, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = float(d(g));
  return v;
}

std::vector<float> heavy_tailed(std::size_t n, std::mt19937_64 g) {
  std::normal_distribution<double> d(0, 1);
  std::bernoulli_distribution outlier(kOutlierShare);
  std::vector<float> v(n);
  for (float& x : v) x = float(d(g)) * (outlier(g) ? kOutlierScale : 1.0f);
  return v;
}

struct Dims {
  std::int64_t m = 0, n = 0, k = 0;
  std::size_t a() const { return std::size_t(m * k); }
  std::size_t c() const { return std::size_t(m * n); }
};

// A layer's fp32 operands, shared by every precision, and B in int8 and bf16.
struct LayerData {
  Dims d;
  std::vector<std::string> ops;
  std::vector<float> b, bias, scale, shift, residual;
  std::vector<std::int8_t> qb;
  std::vector<float> b_scale;            // per column
  std::vector<std::int32_t> qb_col_sum;  // per column: the compensation before A's zero point
  std::vector<std::uint16_t> b16;
  EpilogueArgs epilogue() const;
};

EpilogueArgs LayerData::epilogue() const {
  auto ptr = [](const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); };
  return EpilogueArgs{ops, ptr(bias), ptr(scale), ptr(shift), ptr(residual)};
}

// Symmetric s8 per output column from max|B[:, j]|: weights are never clipped.
void quantize_weights(LayerData& l) {
  host::Int8Weights q = host::quantize_weights_int8(l.b, 1, l.d.k, l.d.n);
  l.qb = std::move(q.q);
  l.b_scale = std::move(q.scale);
  l.qb_col_sum = std::move(q.column_sum);
  l.b16.resize(l.b.size());
  std::transform(l.b.begin(), l.b.end(), l.b16.begin(), host::to_bf16);
}

LayerData make_layer_data(const Workload& w, std::uint64_t seed, std::size_t index) {
  LayerData l;
  l.d = {w.dim("M"), w.dim("N"), w.dim("K")};
  l.ops = w.epilogue();
  const auto n = std::size_t(l.d.n);
  l.b = normal(std::size_t(l.d.k) * n, 0, 1 / std::sqrt(double(l.d.k)), rng(seed, index, Stream::weights));
  if (w.has_epilogue("bias")) l.bias = normal(n, 0, kSmall, rng(seed, index, Stream::bias));
  if (w.has_epilogue("batchnorm")) {
    l.scale = normal(n, 1, kSmall, rng(seed, index, Stream::bn_scale));
    l.shift = normal(n, 0, kSmall, rng(seed, index, Stream::bn_shift));
  }
  if (w.has_epilogue("add")) l.residual = normal(l.d.c(), 0, 1, rng(seed, index, Stream::residual));
  quantize_weights(l);
  return l;
}

// A's form for one precision: pointers into it must outlive the kernel call.
struct KernelInput {
  DType dtype = DType::float32;
  std::span<const float> a;
  std::vector<std::uint8_t> qa;
  std::vector<std::uint16_t> a16;
  std::vector<float> qscale;
  std::vector<std::int32_t> qcomp;
};

KernelInput prepare(const LayerData& l, DType dtype, std::span<const float> a, host::QuantRange range) {
  KernelInput in{dtype, a, {}, {}, {}, {}};
  if (dtype == DType::bfloat16) {
    in.a16.resize(a.size());
    std::transform(a.begin(), a.end(), in.a16.begin(), host::to_bf16);
  } else if (dtype == DType::int8) {
    const host::AffineU8 code = host::affine_params(range);
    in.qa.resize(a.size());
    std::transform(a.begin(), a.end(), in.qa.begin(), [&](float x) { return code.quantize(x); });
    for (std::size_t j = 0; j < l.b_scale.size(); ++j) {
      in.qscale.push_back(code.scale * l.b_scale[j]);
      in.qcomp.push_back(code.zero_point * l.qb_col_sum[j]);
    }
  }
  return in;
}

void call(Runtime& rt, const LayerData& l, const KernelInput& in, float* c) {
  const Dims& d = l.d;
  if (in.dtype == DType::int8) {
    rt.matmul_int8(in.qa.data(), l.qb.data(), c, in.qscale.data(), in.qcomp.data(), d.m, d.n, d.k, l.epilogue());
  } else if (in.dtype == DType::bfloat16) {
    rt.matmul_bf16(in.a16.data(), l.b16.data(), c, d.m, d.n, d.k, l.epilogue());
  } else {
    rt.matmul(in.a.data(), l.b.data(), c, d.m, d.n, d.k, l.epilogue());
  }
}

// The layer's output in dtype for one batch of M rows.
std::vector<float> run(Runtime& rt, const LayerData& l, DType dtype, std::span<const float> a,
                       host::QuantRange range = {}) {
  std::vector<float> c(l.d.c());
  call(rt, l, prepare(l, dtype, a, range), c.data());
  return c;
}

// The fp32 outputs of consecutive batches of M rows (the calibration chain).
std::vector<float> run_batches(Runtime& rt, const LayerData& l, std::span<const float> a) {
  std::vector<float> out;
  for (std::size_t at = 0; at < a.size(); at += l.d.a()) {
    const std::vector<float> c = run(rt, l, DType::float32, a.subspan(at, l.d.a()));
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

// Median of `calls` timed kernel calls after the first (untimed: it loads the kernel and warms
// the caches), in microseconds; c holds the output.
double median_us(Runtime& rt, const LayerData& l, const KernelInput& in, int calls, std::vector<float>& c) {
  c.assign(l.d.c(), 0.0f);
  call(rt, l, in, c.data());
  std::vector<double> us;
  for (int i = 0; i < calls; ++i) {
    const auto start = std::chrono::steady_clock::now();
    call(rt, l, in, c.data());
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(us.begin(), us.begin() + std::ptrdiff_t(us.size() / 2), us.end());
  return us[us.size() / 2];
}

// ||y - ref|| / ||ref||, in double.
double relative_rms(const std::vector<float>& y, const std::vector<float>& ref) {
  double err = 0, sig = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = double(y[i]) - double(ref[i]);
    err += d * d;
    sig += double(ref[i]) * double(ref[i]);
  }
  if (sig == 0) return err == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(err / sig);
}

bool bf16_available() {
  const host::MachineInfo& m = host::this_machine();
  return m.has_flag("avx512_bf16") && m.simd_bytes == 64;
}

void require_int8() {
  if (const std::string why = int8_unavailable(); !why.empty()) throw_bad_input("sensitivity: " + why);
}

std::string field(std::size_t i, const char* name) { return "field 'layers[" + std::to_string(i) + "]." + name + "'"; }

void validate_layers(const std::vector<SensitivityLayer>& layers) {
  if (layers.empty()) throw_bad_input("sensitivity: field 'layers' must not be empty");
  std::set<std::string> names;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Workload& w = layers[i].workload;
    const std::string& name = layers[i].name;
    // A precision config keys layers by name, and "*" there means every other layer.
    if (name.empty() || name == "*" || !names.insert(name).second)
      throw_bad_input("sensitivity: " + field(i, "name") + " must be non-empty, not '*' and unique; got '" + name +
                      "'");
    std::string why;
    if (!sensitivity_layer_supported(w, &why)) throw_bad_input("sensitivity: " + field(i, "workload") + " " + why);
  }
}

void validate_options(const SensitivityOptions& o) {
  if (o.calibration_rows <= 0)
    throw_bad_input("sensitivity: field 'calibration_rows' must be > 0, got " + std::to_string(o.calibration_rows));
  if (o.timed_calls <= 0)
    throw_bad_input("sensitivity: field 'timed_calls' must be > 0, got " + std::to_string(o.timed_calls));
}

// Reads the previous layer's output: its K is that layer's N and its M the same.
bool is_chained(const std::vector<SensitivityLayer>& layers, std::size_t i, const SensitivityOptions& o) {
  if (i == 0 || !o.chain) return false;
  const Workload &w = layers[i].workload, &prev = layers[i - 1].workload;
  return w.dim("K") == prev.dim("N") && w.dim("M") == prev.dim("M");
}

std::vector<float> eval_input(const LayerData& l, std::uint64_t seed, std::size_t index) {
  return heavy_tailed(l.d.a(), rng(seed, index, Stream::eval_input));
}

// Whole batches of M rows holding at least calibration_rows rows.
std::vector<float> calib_input(const LayerData& l, const SensitivityOptions& o, std::size_t index) {
  const std::int64_t batches = (o.calibration_rows + l.d.m - 1) / l.d.m;
  return heavy_tailed(std::size_t(batches) * l.d.a(), rng(o.seed, index, Stream::calib_input));
}

// One layer measured on its inputs; y32 receives the fp32 output of the evaluation batch.
LayerSensitivity measure_layer(Runtime& rt, const SensitivityLayer& layer, const LayerData& l,
                               std::span<const float> eval, std::span<const float> calib, const SensitivityOptions& o,
                               std::vector<float>& y32) {
  LayerSensitivity s;
  s.name = layer.name;
  s.workload = layer.workload;
  s.act_range = host::calibrate(calib, o.calibration);
  s.saturation = host::saturation_fraction(eval, s.act_range);
  s.fp32_us = median_us(rt, l, prepare(l, DType::float32, eval, {}), o.timed_calls, y32);
  std::vector<float> y;
  s.int8_us = median_us(rt, l, prepare(l, DType::int8, eval, s.act_range), o.timed_calls, y);
  s.int8_error = relative_rms(y, y32);
  s.bf16_us = s.bf16_error = std::numeric_limits<double>::quiet_NaN();
  if (bf16_available()) {
    s.bf16_us = median_us(rt, l, prepare(l, DType::bfloat16, eval, {}), o.timed_calls, y);
    s.bf16_error = relative_rms(y, y32);
  }
  return s;
}

DType choose(const LayerSensitivity& l, double threshold, bool bf16) {
  if (l.int8_error <= threshold) return DType::int8;
  if (bf16 && l.bf16_error <= threshold) return DType::bfloat16;  // NaN (not measured) never is
  return DType::float32;
}

void require_chain(const std::vector<SensitivityLayer>& layers, const MixedPrecisionPlan& plan,
                   const SensitivityOptions& o) {
  if (plan.layers.size() != layers.size())
    throw_bad_input("sensitivity: field 'layers' has " + std::to_string(layers.size()) + " layers, the plan " +
                    std::to_string(plan.layers.size()));
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (plan.layers[i].name != layers[i].name)
      throw_bad_input("sensitivity: " + field(i, "name") + " is '" + layers[i].name + "', the plan's '" +
                      plan.layers[i].name + "'");
    if (i > 0 && !is_chained(layers, i, o))
      throw_bad_input("sensitivity: field 'layers' is no chain: layer '" + layers[i].name +
                      "' does not read the previous layer's output (K = previous N, same M)");
  }
}

}  // namespace

bool sensitivity_layer_supported(const Workload& w, std::string* why) {
  std::string reason;
  if (w.op() != "matmul" || w.dtype() != DType::float32) {
    reason = "must be a float32 matmul, got " + w.label();
  } else if (std::string host_why; !host::supports(w, &host_why)) {
    reason = "is not generated on the host: " + host_why;
  }
  if (why) *why = reason;
  return reason.empty();
}

std::string int8_unavailable() {
  const host::MachineInfo& m = host::this_machine();
  if (m.has_flag("avx512_vnni") && m.simd_bytes == 64) return "";
  return "int8 kernels need a CPU with avx512_vnni; this one (" + m.model + ") has none";
}

std::vector<LayerSensitivity> measure_sensitivity(Runtime& rt, const std::vector<SensitivityLayer>& layers,
                                                  const SensitivityOptions& options) {
  validate_layers(layers);
  validate_options(options);
  require_int8();
  std::vector<LayerSensitivity> out;
  std::vector<float> eval, calib;  // the previous layer's fp32 outputs while the chain lasts
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerData l = make_layer_data(layers[i].workload, options.seed, i);
    const bool chained = is_chained(layers, i, options);
    if (!chained) {
      eval = eval_input(l, options.seed, i);
      calib = calib_input(l, options, i);
    }
    std::vector<float> y32;
    out.push_back(measure_layer(rt, layers[i], l, eval, calib, options, y32));
    out.back().chained = chained;
    eval = std::move(y32);
    calib = run_batches(rt, l, calib);
  }
  return out;
}

MixedPrecisionPlan plan_precision(const std::vector<LayerSensitivity>& layers, double threshold, bool bf16_available) {
  if (layers.empty()) throw_bad_input("plan_precision: field 'layers' must not be empty");
  if (!std::isfinite(threshold) || threshold < 0)
    throw_bad_input("plan_precision: field 'threshold' must be finite and >= 0, got " + std::to_string(threshold));
  MixedPrecisionPlan plan;
  plan.threshold = threshold;
  for (const LayerSensitivity& l : layers) {
    const DType d = choose(l, threshold, bf16_available);
    plan.layers.push_back({l.name, d, l.error(d), l.time_us(d), l.act_range});
    plan.time_us += l.time_us(d);
    plan.fp32_time_us += l.fp32_us;
  }
  return plan;
}

namespace {

// Layer i of the plan one precision step up (plan_chain).
void promote(MixedPrecisionPlan& plan, std::size_t i, const LayerSensitivity& l, double threshold, bool bf16) {
  PlannedLayer& p = plan.layers[i];
  const DType up = p.dtype == DType::int8 && bf16 && l.bf16_error <= threshold ? DType::bfloat16 : DType::float32;
  plan.time_us += l.time_us(up) - p.time_us;
  p.dtype = up;
  p.error = l.error(up);
  p.time_us = l.time_us(up);
}

// The low-precision layer with the largest own error; npos when every layer is fp32.
std::size_t worst_low_precision(const MixedPrecisionPlan& plan) {
  std::size_t worst = std::string::npos;
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    if (plan.layers[i].dtype == DType::float32) continue;
    if (worst == std::string::npos || plan.layers[i].error > plan.layers[worst].error) worst = i;
  }
  return worst;
}

}  // namespace

MixedPrecisionPlan plan_chain(Runtime& rt, const std::vector<SensitivityLayer>& layers,
                              const std::vector<LayerSensitivity>& measured_layers, double threshold,
                              bool bf16_available, const SensitivityOptions& options, double* measured) {
  MixedPrecisionPlan plan = plan_precision(measured_layers, threshold, bf16_available);
  double error = chained_error(rt, layers, plan, options);
  for (std::size_t i = worst_low_precision(plan); error > threshold && i != std::string::npos;
       i = worst_low_precision(plan)) {
    promote(plan, i, measured_layers[i], threshold, bf16_available);
    error = chained_error(rt, layers, plan, options);
  }
  if (measured) *measured = error;
  return plan;
}

double chained_error(Runtime& rt, const std::vector<SensitivityLayer>& layers, const MixedPrecisionPlan& plan,
                     const SensitivityOptions& options) {
  validate_layers(layers);
  require_chain(layers, plan, options);
  std::vector<float> ref, y;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerData l = make_layer_data(layers[i].workload, options.seed, i);
    if (i == 0) ref = y = eval_input(l, options.seed, i);
    ref = run(rt, l, DType::float32, ref);
    y = run(rt, l, plan.layers[i].dtype, y, plan.layers[i].act_range);
  }
  return relative_rms(y, ref);
}

Json precision_config(const MixedPrecisionPlan& plan) {
  Json config = Json::object();
  for (const PlannedLayer& l : plan.layers) {
    // parse_precision reads 16 bits as float16 unless "type" says bfloat16.
    if (l.dtype == DType::int8)
      config[l.name] = {{"weight", 8}, {"act", 8}};
    else if (l.dtype == DType::bfloat16)
      config[l.name] = {{"weight", 16}, {"act", 16}, {"type", "bfloat16"}};
    else
      config[l.name] = {{"weight", 32}, {"act", 32}};
  }
  return config;
}

}  // namespace atvoss::runtime
