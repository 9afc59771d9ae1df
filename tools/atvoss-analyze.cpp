// atvoss-analyze: where a schedule's time goes, the bottleneck and a hint
// (simulator/analysis.hpp).
//
//   atvoss-analyze --target T --workload W [--schedule S] [--json]
//       the profile of S (default: the vendor-style default schedule) as a table:
//       compute, DMA, sync-wait and launch time with their shares, L1 hit rate,
//       DMA and cube utilisation, GM bytes, workspace, kernels; then the
//       bottleneck and an optimisation hint.
//   atvoss-analyze --target T --workload W1 --workload W2 ... [--schedule S1 ...]
//       several workloads (or one W holding a JSON array of workloads, or of
//       {"workload":..., "schedule":...} objects): the ops ranked by time, each
//       with its share of the total, its bottleneck and a hint.
//   atvoss-analyze --job job.json [--json]
//   atvoss-analyze --db F --model M [--target T] [--json]
//       a whole tuned model (report/model_analysis.hpp): per layer, the planned
//       schedule's bandwidth utilisation, compute-unit activity and sync share, with
//       the layers that break the usual bars flagged. --job reads the job's model,
//       precision, target and database; --db/--model name them (M: zoo name or .onnx).
//   atvoss-analyze --plan model-plan.json [--json]
//       a job's model plan (plan/model_plan.hpp): its end-to-end figure recomputed from the
//       file alone (plan/recompute.hpp), against the figure it states. Exit 1 when the two
//       differ by more than 0.1 %, or a kernel simulated again differs from its stated time.
//   atvoss-analyze --check-plan plan.json
//       checks a memory plan (atvoss-tune job.json --memory-plan plan.json): no two
//       tensors live at the same time share bytes (execution/memory_plan.hpp); prints each
//       overlap, then the plan's peak against the liveness lower bound. Exit 1 on an overlap.
// W and S: inline JSON or a file; T: a preset name, a file, or inline JSON.
// Exit codes: 0 ok, 2 bad input, 1 any other failure (tools/cli_common.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "core/error.hpp"
#include "execution/memory_plan.hpp"
#include "plan/recompute.hpp"
#include "report/model_analysis.hpp"
#include "simulator/analysis.hpp"
#include "simulator/presets.hpp"
#include "simulator/simulator.hpp"
#include "tools/cli_common.hpp"

namespace {

using namespace atvoss;
using namespace atvoss::simulator;

// The recomputed figure agrees with the plan's within this (the goal: 0.1 %).
constexpr double kPlanTolerance = 1e-3;

struct Item {
  Workload workload;
  std::optional<Json> schedule;
};

std::vector<Item> read_items(const std::vector<std::string>& workloads, const std::vector<std::string>& schedules) {
  std::vector<Item> items;
  for (const auto& arg : workloads) {
    const Json j = json_from_arg(arg, "workload");
    if (!j.is_array()) {
      items.push_back({Workload::from_json(j), std::nullopt});
      continue;
    }
    for (const auto& e : j) {
      if (e.is_object() && e.contains("workload")) {
        std::optional<Json> s;
        if (e.contains("schedule")) s = e["schedule"];
        items.push_back({Workload::from_json(e["workload"]), s});
      } else {
        items.push_back({Workload::from_json(e), std::nullopt});
      }
    }
  }
  if (!schedules.empty() && schedules.size() != items.size()) {
    throw_bad_input("analyze: give one --schedule per workload (" + std::to_string(items.size()) + " workloads, " +
                    std::to_string(schedules.size()) + " schedules)");
  }
  for (std::size_t i = 0; i < schedules.size(); ++i) {
    items[i].schedule = json_from_arg(schedules[i], "schedule");
  }
  return items;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

struct Result {
  Workload workload;
  Schedule schedule;
  Measurement m;
  Analysis a;
};

Result run(const Target& t, const Item& item) {
  const ScheduleSpace space = space_for(item.workload, t);
  const Schedule s = item.schedule ? space.parse(*item.schedule) : default_schedule(item.workload, t);
  const Measurement m = simulate(t, item.workload, s, {.noise = 0, .repeat = 1, .seed = 0});
  if (!m.ok()) throw_bad_input("analyze: schedule " + s.to_json().dump() + " is invalid: " + m.message);
  return {item.workload, s, m, analyze(m, s)};
}

void print_one(const Result& r) {
  const Profile& p = r.m.profile;
  std::cout << "workload: " << r.workload.label() << "\nschedule: " << r.schedule.to_json().dump()
            << "\ntime:     " << fmt("%.2f us", r.m.time_us) << "\n\n";
  auto row = [](const char* name, double us, double share) {
    std::cout << "  " << name << fmt("%12.2f us", us) << fmt("%7.1f %%", 100 * share) << "\n";
  };
  row("compute  ", p.compute_us, r.a.compute_share);
  row("dma      ", p.dma_us, r.a.dma_share);
  row("sync-wait", p.sync_wait_us, r.a.sync_share);
  row("launch   ", p.launch_us, r.a.launch_share);
  std::cout << "\n  L1 hit rate       " << fmt("%.3f", p.l1_hit_rate) << "\n  DMA utilisation   "
            << fmt("%.3f", p.dma_utilisation) << "\n  cube utilisation  " << fmt("%.3f", p.cube_utilisation)
            << "\n  GM bytes          " << fmt("%.0f", p.gm_bytes) << "\n  peak workspace    "
            << fmt("%.0f B", p.peak_workspace_bytes) << "\n  kernels           " << p.kernels
            << "\n\nbottleneck: " << r.a.bottleneck << "\nhint: " << r.a.hint << "\n";
}

void print_many(std::vector<Result> results) {
  std::sort(results.begin(), results.end(), [](const Result& a, const Result& b) { return a.m.time_us > b.m.time_us; });
  double total = 0;
  for (const auto& r : results) total += r.m.time_us;
  std::cout << "total " << fmt("%.2f us", total) << " over " << results.size() << " ops\n\n";
  int rank = 0;
  for (const auto& r : results) {
    std::cout << ++rank << ". " << r.workload.label() << "\n   " << fmt("%.2f us", r.m.time_us)
              << fmt(" (%.1f %% of total)", 100 * r.m.time_us / total) << ", " << r.a.bottleneck
              << "-bound\n   hint: " << r.a.hint << "\n";
  }
}

Json to_json(const Result& r) {
  return {{"workload", r.workload.to_json()},
          {"schedule", r.schedule.to_json()},
          {"measurement", r.m.to_json()},
          {"bottleneck", r.a.bottleneck},
          {"hint", r.a.hint},
          {"shares",
           {{"compute", r.a.compute_share},
            {"dma", r.a.dma_share},
            {"sync_wait", r.a.sync_share},
            {"launch", r.a.launch_share}}}};
}

int run_model(const std::string& job, const std::string& db, const std::string& model, const std::string& target,
              bool json) {
  const report::ModelAnalysis a =
      !job.empty() ? report::analyze_job_file(job) : report::analyze_stored_model(db, model, target);
  if (json) {
    std::cout << a.to_json().dump(2) << "\n";
  } else {
    std::cout << report::format_model_analysis(a);
  }
  return 0;
}

int run_check_plan(const std::string& path) {
  const execution::MemoryPlan plan = execution::MemoryPlan::from_json(load_json_file(path, "--check-plan"));
  const auto problems = execution::check_plan(plan);
  for (const auto& p : problems) std::cout << "overlap: " << p << "\n";
  std::cout << plan.allocations.size() << " tensors, peak " << plan.peak_bytes << " bytes, liveness lower bound "
            << plan.lower_bound_bytes << " bytes"
            << fmt(" (%.1f %% above)", plan.lower_bound_bytes > 0
                                           ? 100.0 * (double(plan.peak_bytes) / double(plan.lower_bound_bytes) - 1)
                                           : 0.0)
            << (problems.empty() ? "; sound\n" : "\n");
  return problems.empty() ? 0 : 1;
}

int run_workloads(const std::string& target, const std::vector<std::string>& workloads,
                  const std::vector<std::string>& schedules, bool json) {
  if (workloads.empty()) throw_bad_input("analyze: give --workload, --job, or --db with --model");
  const Target t = load_target(target);
  std::vector<Result> results;
  for (const auto& item : read_items(workloads, schedules)) results.push_back(run(t, item));
  if (json) {
    Json out = Json::array();
    for (const auto& r : results) out.push_back(to_json(r));
    std::cout << (results.size() == 1 ? out[0] : out).dump(2) << "\n";
  } else if (results.size() == 1) {
    print_one(results.front());
  } else {
    print_many(results);
  }
  return 0;
}

// The model plan's figure recomputed from the file alone; exit 1 when it does not reproduce.
int run_plan(const std::string& path, bool json) {
  const plan::ModelPlan p = plan::ModelPlan::load(path);
  const plan::Recomputed r = plan::recompute(p);
  const double error = r.relative_error(p);
  const bool agrees = std::abs(error) <= kPlanTolerance && r.mismatches.empty();
  if (json) {
    std::cout << Json{{"plan_us", p.end_to_end_us},
                      {"recomputed_us", r.end_to_end_us},
                      {"default_us", p.default_us},
                      {"relative_error", error},
                      {"kernels_simulated_again", r.retimed},
                      {"mismatches", r.mismatches},
                      {"agrees", agrees}}
                     .dump(2)
              << "\n";
    return agrees ? 0 : 1;
  }
  for (const auto& m : r.mismatches) std::cout << "mismatch: " << m << "\n";
  std::cout << "model plan " << p.job << " (" << p.model << " on " << p.target.name << ", " << p.tasks.size()
            << " tasks): plan " << fmt("%.3f us", p.end_to_end_us) << ", recomputed " << fmt("%.3f us", r.end_to_end_us)
            << fmt(" (%+.4f %%)", 100 * error) << "; vendor default " << fmt("%.3f us", p.default_us) << "\n"
            << (r.retimed ? "kernels simulated again" : "kernel times as measured on the machine") << "\n"
            << (agrees ? "agrees" : "does not agree") << "\n";
  return agrees ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"atvoss-analyze: profile, bottleneck and hint of simulated schedules"};
  std::string target = "ascend910b", job, db, model, check_plan, plan_file;
  std::vector<std::string> workloads, schedules;
  bool json = false;
  app.add_option("--target,-t", target, "preset name, target JSON file, or inline JSON")->capture_default_str();
  auto* w = app.add_option("--workload,-w", workloads, "workload (inline JSON or file); repeatable");
  app.add_option("--schedule,-s", schedules, "schedule per workload (default: default_schedule)");
  auto* j = app.add_option("--job", job, "a tuned job's spec: analyse its model layer by layer")->excludes(w);
  auto* d = app.add_option("--db", db, "tuning database of a tuned model (with --model)")->excludes(w, j);
  auto* m = app.add_option("--model", model, "zoo model or .onnx file tuned into --db")->excludes(w, j);
  d->needs(m);
  m->needs(d);
  app.add_flag("--json", json, "print JSON");
  app.add_option("--check-plan", check_plan, "a memory plan (JSON) to check for tensors sharing bytes while live")
      ->excludes(w, j, d);
  app.add_option("--plan", plan_file, "a model plan (a job's model_plan file): recompute its end-to-end figure")
      ->excludes(w, j, d);
  return atvoss::tools::run_cli(app, argc, argv, [&] {
    if (!plan_file.empty()) return run_plan(plan_file, json);
    if (!check_plan.empty()) return run_check_plan(check_plan);
    if (!job.empty() || !db.empty()) return run_model(job, db, model, target, json);
    return run_workloads(target, workloads, schedules, json);
  });
}
