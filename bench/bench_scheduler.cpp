// Task-scheduler benchmark: does Ansor's gradient rule spend a model's
// trial budget better than an even spread? Each run is a full batch job
// (report::run_and_report, the same code atvoss-tune runs) on a fresh database; the
// figure of merit is the weighted end-to-end time of the tuned model, re-simulated
// noise-free (the model plan's figure, plan/model_plan.hpp). Same seeds for both policies.
//   bench_scheduler [--model resnet50] [--target ascend910] [--trials 2000]
//                   [--strategy evolutionary] [--seeds 3] [--seed-base 1]
//                   [--early-stopping 0] [--regret]
// Prints one row per (policy, seed), the mean per policy and the paired difference;
// exit 1 if the gradient rule is not better on the mean. --regret adds, per seed and
// task, the weighted regret against the exhaustive (noise-free) optimum of the task's
// space: of the schedule the job picked, and of the best schedule it measured (what
// a perfect pick among the measured would have shipped).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench/quality_suite.hpp"
#include "core/error.hpp"
#include "db/tuning_database.hpp"
#include "report/job_report.hpp"
#include "simulator/presets.hpp"

namespace {

using namespace atvoss;
namespace fs = std::filesystem;

struct Args {
  std::string model = "resnet50", target = "ascend910", strategy = "evolutionary";
  int trials = 2000, seeds = 3, seed_base = 1, early_stopping = 0;
  bool regret = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--regret") {
      a.regret = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) throw_bad_input("bench_scheduler: flag " + k + " needs a value");
    const std::string v = argv[i + 1];
    if (k == "--model")
      a.model = v;
    else if (k == "--target")
      a.target = v;
    else if (k == "--strategy")
      a.strategy = v;
    else if (k == "--trials")
      a.trials = std::stoi(v);
    else if (k == "--seeds")
      a.seeds = std::stoi(v);
    else if (k == "--seed-base")
      a.seed_base = std::stoi(v);
    else if (k == "--early-stopping")
      a.early_stopping = std::stoi(v);
    else
      throw_bad_input("bench_scheduler: unknown flag " + k);
  }
  return a;
}

struct Run {
  double tuned_us = 0, default_us = 0, seconds = 0;
  Json tasks;
  std::string database;
};

Run run_once(const Args& a, const std::string& policy, int seed, const fs::path& dir) {
  const std::string name = policy + "-" + std::to_string(seed);
  Json spec{{"name", name},
            {"target", a.target},
            {"model", a.model},
            {"trials", a.trials},
            {"strategy", a.strategy},
            {"scheduler", policy},
            {"seed", seed},
            {"early_stopping", a.early_stopping},
            {"database", (dir / (name + ".db")).string()},
            {"export", (dir / (name + "-table.json")).string()},
            {"report", (dir / (name + "-report.html")).string()}};
  tuner::JobRunOptions options;
  options.quiet = true;
  const auto start = std::chrono::steady_clock::now();
  const auto out = report::run_and_report(tuner::JobSpec::from_json(spec), options);
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.tasks = out.summary["tasks"];
  r.database = out.database;
  for (const auto& v : out.summary["variants"]) {
    const std::string n = v["name"];
    if (n.rfind("(a)", 0) == 0) r.default_us = v["end_to_end_us"];
    if (n.rfind("(d)", 0) == 0) r.tuned_us = v["end_to_end_us"];
  }
  return r;
}

// Per policy, summed over tasks: the weighted regret of the best measured schedules
// (what a perfect final pick would have shipped), and the exhaustive optimum.
struct Regret {
  double optimum_us = 0;
  double found[2] = {0, 0};
};

// Prints per task the trials each policy gave it, the weighted regret of its pick,
// weight * (noise-free time - exhaustive optimum), and that of its best measured schedule.
// truths caches each task's enumerated space (bench/quality_suite.hpp) across seeds.
Regret print_regret(const Target& target, const Run (&runs)[2], std::map<std::string, bench::GroundTruth>& truths) {
  std::printf("  %-28s %6s %13s %19s %19s\n", "task", "weight", "trials g/rr", "weighted regret g/rr",
              "best measured g/rr");
  double picked_total[2] = {0, 0};
  Regret out;
  std::vector<db::TuningDatabase> dbs;
  for (const auto& r : runs) dbs.push_back(db::TuningDatabase::open(r.database));
  for (std::size_t i = 0; i < runs[0].tasks.size(); ++i) {
    const Json& t0 = runs[0].tasks[i];
    const Workload w = Workload::from_json(t0["workload"]);
    const std::string name = t0["name"];
    const double weight = t0["weight"];
    if (!truths.count(name)) truths.emplace(name, bench::ground_truth({name, w, target}));
    const bench::GroundTruth& truth = truths.at(name);
    out.optimum_us += weight * truth.optimum_us;
    double picked[2], found[2];
    for (int p = 0; p < 2; ++p) {
      const Json& t = runs[p].tasks[i];
      picked[p] = weight * (truth.true_time(Schedule::from_json(t["best_schedule"])) - truth.optimum_us);
      double best_stored = std::numeric_limits<double>::infinity();
      for (const auto& rec : dbs[p].records().history(w.key())) {
        if (rec.measurement.ok()) best_stored = std::min(best_stored, truth.true_time(rec.schedule));
      }
      found[p] = weight * (best_stored - truth.optimum_us);
      picked_total[p] += picked[p];
      out.found[p] += found[p];
    }
    std::printf("  %-28s %6.0f %6d/%-6d %9.2f/%-9.2f %9.2f/%-9.2f\n", name.c_str(), weight, int(t0["trials"]),
                int(runs[1].tasks[i]["trials"]), picked[0], picked[1], found[0], found[1]);
  }
  std::printf("  %-28s %6s %13s %9.2f/%-9.2f %9.2f/%-9.2f\n", "total", "", "", picked_total[0], picked_total[1],
              out.found[0], out.found[1]);
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  const fs::path dir = fs::temp_directory_path() / ("atvoss-bench-scheduler-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::printf("model %s on %s, %d trials, strategy %s, %d seeds\n", a.model.c_str(), a.target.c_str(), a.trials,
              a.strategy.c_str(), a.seeds);
  std::printf("%-12s %5s %16s %16s %9s\n", "policy", "seed", "end-to-end us", "default us", "seconds");
  double mean[2] = {0, 0};
  const char* policies[2] = {"gradient", "round_robin"};
  const Target target = simulator::load_target(a.target);
  std::map<std::string, bench::GroundTruth> truths;
  std::vector<double> diffs;  // gradient - even, per seed
  Regret regret_sum;
  for (int seed = a.seed_base; seed < a.seed_base + a.seeds; ++seed) {
    Run runs[2];
    for (int p = 0; p < 2; ++p) {
      runs[p] = run_once(a, policies[p], seed, dir);
      const Run& r = runs[p];
      mean[p] += r.tuned_us / a.seeds;
      std::printf("%-12s %5d %16.2f %16.2f %9.1f\n", policies[p], seed, r.tuned_us, r.default_us, r.seconds);
      std::fflush(stdout);
    }
    diffs.push_back(runs[0].tuned_us - runs[1].tuned_us);
    if (a.regret) {
      const Regret r = print_regret(target, runs, truths);
      regret_sum.optimum_us = r.optimum_us;
      for (int p = 0; p < 2; ++p) regret_sum.found[p] += r.found[p] / a.seeds;
    }
  }
  fs::remove_all(dir);
  double sd = 0;
  const double mean_diff = mean[0] - mean[1];
  for (double d : diffs) sd += (d - mean_diff) * (d - mean_diff);
  sd = diffs.size() > 1 ? std::sqrt(sd / double(diffs.size() - 1)) : 0;
  const auto wins = std::count_if(diffs.begin(), diffs.end(), [](double d) { return d < 0; });
  std::printf(
      "mean weighted end-to-end: gradient %.2f us, even spread %.2f us (%.2f%% lower); "
      "gradient lower on %ld of %zu seeds; paired difference %.2f +- %.2f us (std error)\n",
      mean[0], mean[1], 100 * (1 - mean[0] / mean[1]), long(wins), diffs.size(), mean_diff,
      sd / std::sqrt(double(diffs.size())));
  if (a.regret) {
    std::printf(
        "exhaustive optimum %.2f us; mean regret of the best measured schedules: gradient "
        "%.2f us, even spread %.2f us\n",
        regret_sum.optimum_us, regret_sum.found[0], regret_sum.found[1]);
  }
  return mean[0] < mean[1] ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 2;
}
