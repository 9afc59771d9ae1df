// bench_model_plan: the model plan's three promises (plan/plan_model.hpp) on every model and
// budget given, each job run as atvoss-tune runs it (report::run_and_report) on a fresh
// database, then checked from its outputs alone:
//   mismatch  tasks whose exported table entry or model-plan entry is not the schedule the
//             report's figure used (summary tasks[].chosen_schedule); the goal is 0;
//   dflt      tasks the check kept at the vendor default;
//   recomp    the plan file's figure recomputed from the file alone (plan/recompute.hpp),
//             relative error against the figure the job printed; the goal is <= 0.1 %;
//   tuned <= default, scheduled: the plan's figure against the vendor default's graph run.
// Usage: bench_model_plan [--target T] [--launch host|sunk] [--trials 100,400,2000] [--seed N] [MODEL ...]
//   MODEL: a zoo name or an .onnx file; default: every zoo model.
// Exit 1 when any promise is broken, so that a script can run it as a check.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include "core/error.hpp"
#include "db/table/schedule_table.hpp"
#include "frontend/model_zoo.hpp"
#include "plan/recompute.hpp"
#include "report/job_report.hpp"

namespace {

using namespace atvoss;
namespace fs = std::filesystem;

struct Args {
  std::string target = "ascend910";
  std::string launch;  // empty: the target's own (docs/job-spec.md, launch)
  std::vector<int> trials = {100, 400, 2000};
  int seed = 1;
  std::vector<std::string> models;
};

std::vector<int> int_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--target" && i + 1 < argc) {
      a.target = argv[++i];
    } else if (arg == "--launch" && i + 1 < argc) {
      a.launch = argv[++i];
    } else if (arg == "--trials" && i + 1 < argc) {
      a.trials = int_list(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      a.seed = std::stoi(argv[++i]);
    } else {
      a.models.push_back(arg);
    }
  }
  if (a.models.empty()) a.models = frontend::zoo_names();
  return a;
}

// Tasks whose table entry or plan entry is not the schedule the report's figure used.
int mismatches(const report::JobOutcome& out, const plan::ModelPlan& file) {
  const auto table = table::ScheduleTable::load(out.table);
  int bad = 0;
  const Json& tasks = out.summary.at("tasks");
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Schedule used = Schedule::from_json(tasks[i].at("chosen_schedule"));
    const auto hit = table->lookup(Workload::from_json(tasks[i].at("workload")));
    const bool table_ok = hit.kind == table::MatchKind::exact && hit.entry->schedule == used;
    const bool plan_ok = i < file.tasks.size() && file.tasks[i].schedule == used;
    bad += table_ok && plan_ok ? 0 : 1;
  }
  return bad + int(table->entries().size() != tasks.size());
}

bool run_one(const Args& a, const std::string& model, int trials, const fs::path& dir) {
  const std::string name = fs::path(model).stem().string();
  Json spec{{"name", name},
            {"target", a.target},
            {"model", model},
            {"trials", trials},
            {"seed", a.seed},
            {"database", (dir / "j.db").string()},
            {"export", (dir / "j-table.json").string()},
            {"report", (dir / "j.html").string()}};
  if (!a.launch.empty()) spec["launch"] = a.launch;
  tuner::JobRunOptions quiet;
  quiet.quiet = true;
  const auto start = std::chrono::steady_clock::now();
  const report::JobOutcome out = report::run_and_report(tuner::JobSpec::from_json(spec), quiet);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const plan::ModelPlan file = plan::ModelPlan::load((dir / "j-model-plan.json").string());
  const plan::Recomputed r = plan::recompute(file);
  const int bad = mismatches(out, file);
  const double error = std::abs(r.relative_error(file)) + std::abs(file.end_to_end_us - out.tuned_us);
  const bool ok = bad == 0 && error <= 1e-3 && r.mismatches.empty() && out.tuned_us <= out.default_us;
  int kept_default = 0;
  for (const auto& t : file.tasks) kept_default += t.provenance == plan::kDefault ? 1 : 0;
  std::printf("%-16s %6d %6zu %6d %8d %12.1f %12.1f %7.3fx %9.2e %8.1f  %s%s\n", name.c_str(), trials,
              file.tasks.size(), out.tasks_tuned, kept_default, out.default_us, out.tuned_us,
              out.default_us / out.tuned_us, error, wall, ok ? "ok" : "BROKEN",
              file.model_check.empty() ? "" : " (model check: defaults kept)");
  std::fflush(stdout);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const fs::path root = fs::temp_directory_path() / ("atvoss-bench-plan-" + std::to_string(::getpid()));
  std::printf("target %s, launch %s, seed %d; figures: the plan's graph run (serial where a model has no graph)\n",
              a.target.c_str(), a.launch.empty() ? "the target's own" : a.launch.c_str(), a.seed);
  std::printf("%-16s %6s %6s %6s %8s %12s %12s %8s %9s %8s  %s\n", "model", "trials", "tasks", "meas", "dflt",
              "default us", "tuned us", "speedup", "recomp", "wall s", "promises");
  bool all = true;
  for (const auto& model : a.models) {
    for (int trials : a.trials) {
      const fs::path dir = root / (fs::path(model).stem().string() + "-" + std::to_string(trials));
      fs::create_directories(dir);
      try {
        all = run_one(a, model, trials, dir) && all;
      } catch (const Error& e) {
        std::printf("%-16s %6d error: %s\n", model.c_str(), trials, e.what());
        all = false;
      }
      fs::remove_all(dir);
    }
  }
  fs::remove_all(root);
  std::printf("%s\n", all ? "every promise kept" : "a promise broken");
  return all ? 0 : 1;
}
