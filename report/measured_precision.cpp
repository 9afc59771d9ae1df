#include "report/measured_precision.hpp"

#include <cmath>

#include "backend/backend.hpp"
#include "frontend/precision.hpp"
#include "runtime/sensitivity.hpp"

namespace atvoss::report {
namespace {

Json number_or_null(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

// The NPU's estimate for w run in int8.
double estimate_in_int8(const Workload& w) {
  Json j = w.to_json();
  j["dtype"] = "int8";
  return frontend::int8_error_estimate(Workload::from_json(j));
}

}  // namespace

Json MeasuredPrecisions::to_json() const {
  Json rows = Json::array();
  for (const auto& l : layers) {
    rows.push_back({{"task", l.task},
                    {"estimated_int8_error", l.estimated_int8},
                    {"int8_error", l.int8_error},
                    {"bf16_error", number_or_null(l.bf16_error)},
                    {"fp32_us", l.fp32_us},
                    {"int8_us", l.int8_us},
                    {"bf16_us", number_or_null(l.bf16_us)}});
  }
  return {{"layers", rows}, {"reason", reason}};
}

MeasuredPrecisions measure_host_precisions(const frontend::TaskSet& tasks, const Target& target, std::uint64_t seed) {
  MeasuredPrecisions out;
  // Only a real machine's kernels run here; a simulated NPU's errors stay estimates.
  if (!backend::target_traits(target).machine_bound) {
    out.reason = "a simulated target: its errors are estimates";
    return out;
  }
  if (const std::string why = runtime::int8_unavailable(); !why.empty()) {
    out.reason = why;
    return out;
  }
  std::vector<runtime::SensitivityLayer> layers;
  for (const auto& t : tasks.tasks()) {
    if (runtime::sensitivity_layer_supported(t.workload)) layers.push_back({t.name, t.workload});
  }
  if (layers.empty()) {
    out.reason = "no fp32 matmul task";
    return out;
  }
  runtime::Runtime rt;
  runtime::SensitivityOptions o;
  o.seed = seed;
  o.chain = false;  // tasks are de-duplicated layers, not a chain
  o.timed_calls = 3;
  for (const auto& l : runtime::measure_sensitivity(rt, layers, o)) {
    out.layers.push_back(
        {l.name, estimate_in_int8(l.workload), l.int8_error, l.bf16_error, l.fp32_us, l.int8_us, l.bf16_us});
  }
  return out;
}

}  // namespace atvoss::report
