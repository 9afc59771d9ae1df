// bench_quant_plan: the per-layer quantisation sensitivity of the zoo's "mlp" and of BERT-base's
// distinct matmuls (M = 128), measured with the real host kernels (runtime/sensitivity.hpp),
// against the NPU's analytic estimate (frontend/precision.hpp's int8_error_estimate); then the
// mixed-precision plan for a few error thresholds, its measured output error, its estimated
// speed-up over fp32 and its "precision" config (checked to parse with parse_precision).
// Default schedules (a Runtime with no table), one thread; weights and inputs seeded.
// Usage: bench_quant_plan [--seed N] [--method min_max|percentile|entropy]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "frontend/model_zoo.hpp"
#include "frontend/precision.hpp"
#include "host/machine.hpp"
#include "runtime/sensitivity.hpp"

namespace {

using namespace atvoss;
using runtime::LayerSensitivity;
using runtime::MixedPrecisionPlan;
using runtime::SensitivityLayer;

runtime::SensitivityOptions parse_args(int argc, char** argv) {
  runtime::SensitivityOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw_bad_input("bench_quant_plan: " + flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--seed" && !value.empty() && value.find_first_not_of("0123456789") == std::string::npos)
      o.seed = std::stoull(value);
    else if (flag == "--method")
      o.calibration.method = host::parse_calibration_method(value);
    else
      throw_bad_input("bench_quant_plan: bad flag " + flag + " " + value +
                      " (--seed N, --method min_max|percentile|entropy)");
  }
  return o;
}

// A model's layers to measure, and how often the model runs each.
struct Model {
  std::string name;
  std::vector<SensitivityLayer> layers;
  std::vector<int> occurrences;
  bool chained = true;
};

Model mlp() {
  const frontend::TaskSet set = frontend::zoo_model("mlp");  // in float16, the NPU's dtype
  Model m{"mlp", {}, {}, true};
  for (const auto& step : set.layer_order()) {
    m.layers.push_back({step.name, frontend::with_dtype(set.tasks()[step.task].workload, DType::float32)});
    m.occurrences.push_back(step.count);
  }
  return m;
}

// w in fp32 (the zoo's dtype is the NPU's float16) without the epilogue ops the host does not
// generate (BERT's layernorm runs as its own kernel on the host, in fp32, whatever the matmul's).
Workload host_fp32(const Workload& w) {
  Json j = frontend::with_dtype(w, DType::float32).to_json();
  auto& ep = j["epilogue"];
  ep.erase(std::remove(ep.begin(), ep.end(), Json("layernorm")), ep.end());
  return Workload::from_json(j);
}

Model bert() {
  const frontend::TaskSet set = frontend::zoo_model("bert-base");
  Model m{"bert-base", {}, {}, false};
  for (const auto& t : set.tasks()) {
    if (t.workload.op() != "matmul" || m.layers.size() >= 6) continue;
    m.layers.push_back({t.name, host_fp32(t.workload)});
    m.occurrences.push_back(t.weight);
  }
  return m;
}

std::string shape(const Workload& w) {
  std::string s = std::to_string(w.dim("M")) + "x" + std::to_string(w.dim("N")) + "x" + std::to_string(w.dim("K"));
  for (const auto& op : w.epilogue()) s += "+" + op;
  return s;
}

void print_layers(const Model& m, const std::vector<LayerSensitivity>& s) {
  std::printf("%-28s %-26s %5s %17s %7s %9s %9s %9s %9s %9s %9s\n", "layer", "MxNxK+epilogue", "input", "act range",
              "sat", "int8 err", "NPU est", "bf16 err", "fp32 us", "bf16 us", "int8 us");
  for (std::size_t i = 0; i < s.size(); ++i) {
    const LayerSensitivity& l = s[i];
    const double estimate = frontend::int8_error_estimate(frontend::with_dtype(m.layers[i].workload, DType::int8));
    std::printf("%-28s %-26s %5s [%7.2f,%7.2f] %7.5f %9.2e %9.2e %9.2e %9.1f %9.1f %9.1f\n", l.name.c_str(),
                shape(l.workload).c_str(), l.chained ? "chain" : "drawn", l.act_range.lo, l.act_range.hi, l.saturation,
                l.int8_error, estimate, l.bf16_error, l.fp32_us, l.bf16_us, l.int8_us);
  }
}

// The config must say what the plan says when parse_precision reads it back.
void check_parses(const MixedPrecisionPlan& plan, const Json& config) {
  const frontend::PrecisionSpec spec = frontend::parse_precision(config);
  for (const auto& l : plan.layers) {
    if (spec.layers.at(l.name) != l.dtype)
      throw Error(ErrorKind::internal, "precision config of layer " + l.name + " parses to another dtype");
  }
}

double weighted_speedup(const Model& m, const std::vector<LayerSensitivity>& s, const MixedPrecisionPlan& plan) {
  double fp32 = 0, chosen = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    fp32 += m.occurrences[i] * s[i].fp32_us;
    chosen += m.occurrences[i] * plan.layers[i].time_us;
  }
  return fp32 / chosen;
}

void print_plan(runtime::Runtime& rt, const Model& m, const std::vector<LayerSensitivity>& s,
                const runtime::SensitivityOptions& o, double threshold, bool bf16) {
  // A chain is planned on its measured end-to-end error (plan_chain), the rest layer by layer.
  double measured = 0;
  const MixedPrecisionPlan plan = m.chained ? runtime::plan_chain(rt, m.layers, s, threshold, bf16, o, &measured)
                                            : runtime::plan_precision(s, threshold, bf16);
  std::printf("  threshold %.0e:", threshold);
  for (const auto& l : plan.layers) std::printf(" %s=%s", l.name.c_str(), std::string(to_string(l.dtype)).c_str());
  std::printf("\n");
  if (m.chained) {
    std::printf("    measured end-to-end error (chain run in these precisions vs fp32): %.3e (per-layer plan: %.3e)\n",
                measured, runtime::chained_error(rt, m.layers, runtime::plan_precision(s, threshold, bf16), o));
  } else {
    double worst = 0;
    for (const auto& l : plan.layers) worst = std::max(worst, l.error);
    std::printf(
        "    max layer error %.3e (layers measured one by one, not chained here: the attention,\n"
        "    softmax and layernorm between them are not run, so no end-to-end error)\n",
        worst);
  }
  std::printf("    kernel time %.1f us vs fp32 %.1f us: speed-up %.2fx", plan.time_us, plan.fp32_time_us,
              plan.speedup());
  if (!m.chained)
    std::printf(" (%.2fx weighting each matmul by its occurrences in the model)", weighted_speedup(m, s, plan));
  std::printf("\n");
  const Json config = runtime::precision_config(plan);
  check_parses(plan, config);
  std::printf("    precision config (parse_precision reads it back): %s\n", config.dump().c_str());
}

void run_model(runtime::Runtime& rt, const Model& m, runtime::SensitivityOptions o, bool bf16) {
  o.chain = m.chained;
  std::printf("\n== %s: %zu matmul layers, %s ==\n", m.name.c_str(), m.layers.size(),
              m.chained ? "chained (each layer reads the previous fp32 output)"
                        : "distinct matmuls, each on its own heavy-tailed input (not chained)");
  const std::vector<LayerSensitivity> s = runtime::measure_sensitivity(rt, m.layers, o);
  print_layers(m, s);
  for (double t : {1e-3, 1e-2, 5e-2}) print_plan(rt, m, s, o, t, bf16);
}

int run(int argc, char** argv) {
  const runtime::SensitivityOptions options = parse_args(argc, argv);
  const host::MachineInfo& machine = host::this_machine();
  std::printf("bench_quant_plan: seed %llu, activation calibration %s, weights per-channel symmetric s8\n",
              static_cast<unsigned long long>(options.seed),
              std::string(host::to_string(options.calibration.method)).c_str());
  std::printf(
      "CPU: %s; errors are relative RMS of the output vs fp32 on one evaluation batch (calibrated on\n"
      "%lld other rows); times are median kernel times of default schedules, one thread.\n",
      machine.model.c_str(), static_cast<long long>(options.calibration_rows));
  std::printf(
      "Accuracy on a labelled dataset is not measured: there is no dataset (nor trained weights) on this machine.\n");
  if (!machine.has_flag("avx512_vnni")) {
    std::printf("this CPU lacks avx512_vnni: no int8 kernels, nothing to measure\n");
    return 0;
  }
  const bool bf16 = machine.has_flag("avx512_bf16");
  if (!bf16) std::printf("this CPU lacks avx512_bf16: bf16 is neither measured nor planned\n");
  std::printf("BERT-base: layernorm epilogues dropped (not generated on the host); 'add' reads a seeded residual.\n");
  runtime::Runtime rt;
  run_model(rt, mlp(), options, bf16);
  run_model(rt, bert(), options, bf16);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const atvoss::Error& e) {
    std::fprintf(stderr, "bench_quant_plan: %s\n", e.what());
    return atvoss::exit_code_for(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_quant_plan: %s\n", e.what());
    return 2;
  }
}
