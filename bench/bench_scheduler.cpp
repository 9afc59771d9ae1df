// Task-scheduler benchmark (issue 6): does Ansor's gradient rule spend a model's
// trial budget better than an even spread? Each run is a full batch job
// (tuner::run_job, the same code atvoss-tune runs) on a fresh database; the
// figure of merit is the weighted end-to-end time of the tuned model, re-simulated
// noise-free (the report's variant (d)). Same seeds for both policies.
//   bench_scheduler [--model resnet50] [--target ascend910] [--trials 2000]
//                   [--strategy evolutionary] [--seeds 3] [--early-stopping 0]
// Prints one row per (policy, seed) and the mean per policy; exit 1 if the
// gradient rule is not better on the mean.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.hpp"
#include "tuner/job_runner.hpp"

namespace {

using namespace atvoss;
namespace fs = std::filesystem;

struct Args {
  std::string model = "resnet50", target = "ascend910", strategy = "evolutionary";
  int trials = 2000, seeds = 3, early_stopping = 0;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") a.model = v;
    else if (k == "--target") a.target = v;
    else if (k == "--strategy") a.strategy = v;
    else if (k == "--trials") a.trials = std::stoi(v);
    else if (k == "--seeds") a.seeds = std::stoi(v);
    else if (k == "--early-stopping") a.early_stopping = std::stoi(v);
    else throw_bad_input("bench_scheduler: unknown flag " + k);
  }
  return a;
}

struct Run {
  double tuned_us = 0, default_us = 0, seconds = 0;
};

Run run_once(const Args& a, const std::string& policy, int seed, const fs::path& dir) {
  const std::string name = policy + "-" + std::to_string(seed);
  Json spec{{"name", name}, {"target", a.target}, {"model", a.model}, {"trials", a.trials},
            {"strategy", a.strategy}, {"scheduler", policy}, {"seed", seed},
            {"early_stopping", a.early_stopping}, {"database", (dir / (name + ".db")).string()},
            {"export", (dir / (name + "-table.json")).string()},
            {"report", (dir / (name + "-report.html")).string()}};
  tuner::JobRunOptions options;
  options.quiet = true;
  const auto start = std::chrono::steady_clock::now();
  const auto out = tuner::run_job(tuner::JobSpec::from_json(spec), options);
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& v : out.summary["variants"]) {
    const std::string n = v["name"];
    if (n.rfind("(a)", 0) == 0) r.default_us = v["end_to_end_us"];
    if (n.rfind("(d)", 0) == 0) r.tuned_us = v["end_to_end_us"];
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  const fs::path dir = fs::temp_directory_path() / ("atvoss-bench-scheduler-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::printf("model %s on %s, %d trials, strategy %s, %d seeds\n", a.model.c_str(),
              a.target.c_str(), a.trials, a.strategy.c_str(), a.seeds);
  std::printf("%-12s %5s %16s %16s %9s\n", "policy", "seed", "end-to-end us", "default us", "seconds");
  double mean[2] = {0, 0};
  const char* policies[2] = {"gradient", "round_robin"};
  for (int seed = 1; seed <= a.seeds; ++seed) {
    for (int p = 0; p < 2; ++p) {
      const Run r = run_once(a, policies[p], seed, dir);
      mean[p] += r.tuned_us / a.seeds;
      std::printf("%-12s %5d %16.2f %16.2f %9.1f\n", policies[p], seed, r.tuned_us, r.default_us,
                  r.seconds);
      std::fflush(stdout);
    }
  }
  fs::remove_all(dir);
  std::printf("mean weighted end-to-end: gradient %.2f us, even spread %.2f us (%.2f%% lower)\n",
              mean[0], mean[1], 100 * (1 - mean[0] / mean[1]));
  return mean[0] < mean[1] ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 2;
}
