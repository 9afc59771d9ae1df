// atvoss-tune: tune one workload (single-workload mode) or a whole model (batch job).
//   atvoss-tune --target T --workload W --trials N --strategy S --db F [--seed N]
//               [--export table.json] [--json]
//   atvoss-tune job.json [--quiet] [--farm host:port] [--json] [--memory-plan plan.json]
// Exit codes: 0 ok, 2 bad input (flags, job spec, model, ONNX file, unreachable farm), 1 failure.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <unistd.h>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "core/atomic_file.hpp"
#include "core/user_paths.hpp"
#include "costmodel/model_registry.hpp"
#include "db/table_export.hpp"
#include "report/job_report.hpp"
#include "tools/cli_common.hpp"
#include "tuner/single_tune.hpp"

namespace {

using namespace atvoss;

Json curve_json(const std::vector<double>& curve) {
  Json j = Json::array();
  for (double v : curve) j.push_back(std::isfinite(v) ? Json(v) : Json(nullptr));
  return j;
}

struct SingleArgs {
  std::string target, workload, strategy = "model-guided", strategy_config, db, export_path, cost_model = "xgboost";
  int trials = 0, repeat = 3, batch_size = 16, early_stopping = 0, confirm_top = -1;
  std::uint64_t seed = 0;
  bool json = false;
};

int run_single(const SingleArgs& a, const std::string& farm) {
  tuner::SingleTuneSpec spec;
  spec.target = a.target;
  spec.workload = json_from_arg(a.workload, "--workload");
  spec.trials = a.trials;
  spec.strategy = a.strategy;
  if (!a.strategy_config.empty()) spec.strategy_config = json_from_arg(a.strategy_config, "--strategy-config");
  spec.cost_model = a.cost_model;
  spec.db = a.db;
  spec.export_path = a.export_path;
  spec.farm = farm;
  spec.repeat = a.repeat;
  spec.batch_size = a.batch_size;
  spec.early_stopping = a.early_stopping;
  spec.confirm_top = a.confirm_top;
  spec.seed = a.seed;
  const auto [workload, target, r] = tuner::tune_single(spec);
  if (a.json) {
    Json out{{"workload", workload.to_json()},
             {"target", target.name},
             {"trials", r.trials},
             {"resumed", r.resumed},
             {"measured", r.measured},
             {"measured_elsewhere", r.measured_elsewhere},
             {"stop_reason", r.stop_reason},
             {"best_schedule", r.best_schedule ? r.best_schedule->to_json() : Json(nullptr)},
             {"best_us", std::isfinite(r.best_us) ? Json(r.best_us) : Json(nullptr)},
             {"default_us", std::isfinite(r.default_us) ? Json(r.default_us) : Json(nullptr)},
             {"profile", r.best_schedule ? r.best.profile.to_json() : Json(nullptr)},
             {"curve", curve_json(r.curve)},
             {"confirmed", r.confirmed},
             {"pick_changed", r.pick_changed}};
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (!r.best_schedule) {
    std::cout << "no valid schedule found in " << r.trials << " trials\n";
    return 1;
  }
  std::printf("best schedule: %s\nbest time: %.3f us\n", r.best_schedule->to_json().dump().c_str(), r.best_us);
  if (std::isfinite(r.default_us)) {
    std::printf("default schedule: %.3f us (speedup %.2fx)\n", r.default_us, r.default_us / r.best_us);
  }
  std::printf("trials: %d (%d resumed, %d measured now; stop: %s)\n", r.trials, r.resumed, r.measured,
              r.stop_reason.c_str());
  if (r.confirmed > 0) {
    std::printf("confirmed: the %d fastest measured again side by side; %s\n", r.confirmed,
                r.pick_changed ? "the winner changed" : "the winner held");
  }
  return 0;
}

int run_batch(const std::string& job_file, bool quiet, const std::string& farm, bool json,
              const std::string& memory_plan) {
  const auto spec = tuner::JobSpec::load(job_file);
  // Checked before the job runs: a path it cannot write must not cost a whole tuning run.
  if (!memory_plan.empty()) require_replaceable_file(memory_plan, "--memory-plan");
  tuner::JobRunOptions options;
  options.quiet = quiet;
  options.farm = farm;
  const auto out = report::run_and_report(spec, options);
  if (!memory_plan.empty()) {
    write_file_atomically(memory_plan, "--memory-plan",
                          [&](std::ostream& os) { os << out.memory_plan.to_json().dump(1) << "\n"; });
  }
  if (json) {
    std::cout << out.summary.dump(2) << "\n";
    return 0;
  }
  std::printf("job %s: %d tasks, %d trials (%d resumed, %d measured now)\n", spec.name.c_str(), out.tasks, out.trials,
              out.resumed_trials, out.measured);
  if (out.tuned_us > 0 && std::isfinite(out.default_us)) {
    std::printf("end-to-end (the model plan: %s): default %.1f us -> tuned %.1f us (%.2fx)\n",
                out.plan.run ? "graph run" : "serial", out.default_us, out.tuned_us, out.default_us / out.tuned_us);
  }
  if (!out.plan.model_check.empty()) std::printf("model check: %s\n", out.plan.model_check.c_str());
  const Json& not_tuned = out.summary.at("not_tuned");
  if (!not_tuned.empty()) {
    std::printf("%zu nodes not tuned, %.1f us in both figures (%s):\n", not_tuned.size(), out.fallback_us,
                out.summary.at("fallback_rule").get<std::string>().c_str());
    for (const auto& n : not_tuned) {
      std::printf("  %s (%s) x%d: %.2f us - %s\n", n.at("name").get<std::string>().c_str(),
                  n.at("op").get<std::string>().c_str(), n.at("count").get<int>(), n.at("time_us").get<double>(),
                  n.at("reason").get<std::string>().c_str());
    }
  }
  if (out.layout_changes > 0) {
    std::printf("layout changes: %d transposes, %.1f us (in the tuned time; the report lists them)\n",
                out.layout_changes, out.layout_changes_us);
  }
  std::printf("device memory: %s%s\n", out.memory.summary().c_str(), out.memory.fits() ? "" : " - does not fit");
  if (const Json& e = out.summary.at("execution"); !e.is_null()) {
    const Json& m = e.at("memory");
    std::printf("graph run (docs/execution.md): memory plan peak %.1f MB (liveness bound %.1f MB)%s\n",
                m.at("peak_bytes").get<double>() / 1e6, m.at("lower_bound_bytes").get<double>() / 1e6,
                m.at("fits").get<bool>() ? "" : " - with the weights, over the device memory");
    if (m.contains("recompute")) {
      const Json& r = m.at("recompute");
      char outcome[64] = "fits";
      if (!r.at("fits").get<bool>()) {
        std::snprintf(outcome, sizeof outcome, "still over by %.1f MB", r.at("over_bytes").get<double>() / 1e6);
      }
      std::printf("recompute: %d activations run again (+%.1f us) -> memory plan peak %.1f MB: %s\n",
                  r.at("tensors").get<int>(), r.at("extra_us").get<double>(), r.at("peak_bytes").get<double>() / 1e6,
                  outcome);
    }
  }
  if (out.tasks_tuned < out.tasks) {
    std::printf("%d of %d tasks measured; the budget did not reach the rest, which run their zero-shot pick\n",
                out.tasks_tuned, out.tasks);
  }
  std::printf("database: %s\ntable: %s\nmodel plan: %s\nreport: %s\n", out.database.c_str(), out.table.c_str(),
              out.model_plan.c_str(), out.report.c_str());
  return 0;
}

}  // namespace

// XGBoost's OpenMP threads spin-wait between calls by default, which on a small
// machine starves the measurer's threads (a 200-trial job took 21 s instead of
// 0.8 s on 2 cores). libgomp reads OMP_WAIT_POLICY when it is loaded, before
// main(), so the only way to change it from inside is to run again with it set.
void ensure_passive_openmp(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then carry on as we are
}

int main(int argc, char** argv) {
  ensure_passive_openmp(argv);
  CLI::App app{
      "atvoss-tune: tune operator schedules on an NPU target, this CPU or a recorded space (one workload, or a whole "
      "model job)"};
  std::string job_file, farm, memory_plan;
  bool quiet = false;
  SingleArgs a;
  app.add_option("job", job_file, "batch job spec (JSON, see docs/job-spec.md)");
  app.add_option("--target", a.target, "target preset, file, or inline JSON (single-workload mode)");
  app.add_option("--workload", a.workload, "workload JSON or file (single-workload mode)");
  app.add_option("--trials", a.trials, "total trials for the workload (stored ones count)");
  app.add_option("--strategy", a.strategy, "search strategy")->capture_default_str();
  app.add_option("--strategy-config", a.strategy_config,
                 "the strategy's own settings: inline JSON or a file (docs/job-spec.md, strategy_config)");
  app.add_option("--cost-model", a.cost_model, "a registered cost model: " + costmodel::cost_model_list())
      ->capture_default_str();
  app.add_option("--db", a.db, "tuning database file");
  app.add_option("--seed", a.seed, "seed for search and measurement noise")
      ->capture_default_str()
      ->check(tools::non_negative(a.seed));
  app.add_option("--repeat", a.repeat, "measurements per schedule")->capture_default_str();
  app.add_option("--batch-size", a.batch_size, "schedules per round")->capture_default_str();
  app.add_option("--early-stopping", a.early_stopping, "stop after N trials without 0.1% improvement (0 = never)")
      ->capture_default_str();
  app.add_option("--confirm-top", a.confirm_top,
                 "re-measure the K fastest side by side at the end (default: 5 on the host, 0 on simulators)");
  app.add_option("--export", a.export_path, "write the lookup table here afterwards");
  app.add_flag("--json", a.json, "machine-readable output (single mode adds the best-so-far curve)");
  app.add_flag("--quiet", quiet, "no progress output");
  app.add_option("--farm", farm, "measure on a tuning farm at host:port");
  app.add_option(
      "--memory-plan", memory_plan,
      "job mode: write the memory plan of the model's graph run (JSON; check it with atvoss-analyze --check-plan)");
  return tools::run_cli(app, argc, argv, [&]() -> int {
    if (!job_file.empty()) {
      if (!a.target.empty() || !a.workload.empty()) {
        throw_bad_input("give either a job file or --target/--workload, not both");
      }
      return run_batch(job_file, quiet, farm, a.json, memory_plan);
    }
    if (a.target.empty() || a.workload.empty() || a.db.empty() || a.trials == 0) {
      throw_bad_input(
          "single-workload mode needs --target, --workload, --trials and --db "
          "(or give a job file)");
    }
    return run_single(a, farm);
  });
}
