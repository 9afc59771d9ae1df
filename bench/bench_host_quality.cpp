// Host tuning-quality benchmark: search strategies on landscapes of real CPU kernels, with the
// noise of real measurements (docs/host-backend.md, "Tuning quality on real noise"). The landscapes are
// recordings made by record_host_spaces (bench/host_spaces.hpp, data/host-spaces): a seeded
// sample of each workload's valid host space, compiled, checked and timed once. Each search
// runs on a recording as on any recorded space (bench/recorded_runner.hpp): a configuration
// outside the recording is absent, a failed one counts as an evaluation. The recording plays
// the part of a long tuning run: its best time is the reference, and its size bounds the budget.
// Reported per workload and strategy: the evaluations each seed needs to reach 95% of that
// best, their median over seeds, and the fraction at 16/32/64; overall, the median over
// workloads of the per-workload medians, and random's over model-guided's.
// Goal: model-guided <= 64 trials median, >= 2x fewer than random.
// The strategies run with the library's defaults (chosen elsewhere: docs/host-backend.md).
//
// Usage: bench_host_quality [--seeds 5] [--seed-base 1] [--batch 16] [--data DIR]
//        [--strategies random,evolutionary,model-guided-xgboost] [--workloads substring] [--set dev|heldout]
//        [--csv out.csv] [--host-features [--no-heuristic]]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include <CLI/CLI.hpp>

#include "bench/host_spaces.hpp"
#include "bench/recorded_runner.hpp"
#include "core/json.hpp"
#include "host/machine.hpp"
#include "tools/cli_common.hpp"

namespace atvoss::bench {
namespace {

const std::vector<int> kCheckpoints = {16, 32, 64};
const std::string kModelGuided = "model-guided-xgboost";

struct Config {
  int seeds = 5;
  std::uint64_t seed_base = 1;
  int batch = 16;  // atvoss-tune's default batch_size (tuner/single_tune.hpp)
  std::string data = std::string(ATVOSS_DATA_DIR) + "/host-spaces";
  std::vector<std::string> strategies = {"random", "evolutionary", kModelGuided};
  std::string workloads;
  std::string set = "dev";  // bench/host_spaces.hpp: dev or heldout
  std::string csv;
  // The strategies see the host matmul and this machine's target (plan features and the
  // analytic heuristic, as atvoss-tune --target host runs them) instead of a bare table.
  // Meaningful only on the CPU the recordings were made on (data/host-spaces/README.md).
  bool host_features = false;
  // With host_features: rank before the first fit at random instead of with the analytic
  // heuristic (heuristic_before_fit, search/model_guided_config.hpp).
  bool no_heuristic = false;
};

std::string trials_text(double t, int budget) {
  if (t > budget) return ">" + std::to_string(budget);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", t);
  return buf;
}

// Configurations of rs within 5% of its optimum: how large the target is.
std::size_t near_best(const RecordedSpace& rs) {
  std::size_t n = 0;
  for (const auto& s : rs.configurations()) {
    const auto m = rs.measure(s);
    if (m.ok() && *rs.optimum_us() / m.time_us >= 0.95) ++n;
  }
  return n;
}

int run(const Config& cfg) {
  std::ofstream csv;
  if (!cfg.csv.empty()) {
    csv.open(cfg.csv);
    if (!csv) throw Error(ErrorKind::io, "cannot write --csv file '" + cfg.csv + "'");
    csv << "workload,strategy,seed,trials_to_95";
    for (int k : kCheckpoints) csv << ",frac_at_" << k;
    csv << '\n';
  }
  std::map<std::string, std::vector<double>> median_by_workload;  // strategy -> per-workload medians
  int smallest = 0;
  std::printf("%-26s %5s %5s %-22s %-26s %6s", "workload", "rec", "<=5%", "strategy", "trials to 95% per seed",
              "median");
  for (int k : kCheckpoints) std::printf(" %6s", ("@" + std::to_string(k)).c_str());
  std::printf("\n");
  for (const auto& [name, json] : host_workload_set(cfg.set)) {
    if (!cfg.workloads.empty() && name.find(cfg.workloads) == std::string::npos) continue;
    const std::string path = host_space_path(cfg.data, name);
    const auto rs = RecordedSpace::load(path);
    const int budget = static_cast<int>(rs->recorded_count());
    smallest = smallest == 0 ? budget : std::min(smallest, budget);
    const std::size_t good = near_best(*rs);
    for (const auto& label : cfg.strategies) {
      std::vector<double> t95;
      std::map<int, double> frac;
      std::string per_seed;
      for (int i = 0; i < cfg.seeds; ++i) {
        SearchSetup o;
        o.context.seed = cfg.seed_base + static_cast<std::uint64_t>(i);
        o.context.model_threads = 1;  // no OpenMP spinning on a shared machine; the fit is the same
        o.settings["heuristic_before_fit"] = !cfg.no_heuristic;
        if (cfg.host_features) {
          o.context.workload = Workload::from_json(parse_json(json, name));
          o.context.target = host::describe_machine();
        }
        const auto r = run_search(*rs, path, label, o, budget, cfg.batch, cfg.host_features);
        const int t = trials_to(r.curve, 0.95);
        t95.push_back(t);
        per_seed += (per_seed.empty() ? "" : " ") + trials_text(t, budget);
        if (csv) csv << name << ',' << label << ',' << o.context.seed << ',' << t;
        for (int k : kCheckpoints) {
          frac[k] += frac_at(r.curve, k) / cfg.seeds;
          if (csv) csv << ',' << frac_at(r.curve, k);
        }
        if (csv) csv << '\n';
      }
      const double med = median(t95);
      median_by_workload[label].push_back(med);
      std::printf("%-26s %5d %5zu %-22s %-26s %6s", name.c_str(), budget, good, label.c_str(), per_seed.c_str(),
                  trials_text(med, budget).c_str());
      for (int k : kCheckpoints) std::printf(" %6.3f", frac[k]);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  std::printf(
      "\nMedian over workloads of the per-workload median trials to 95%% (%d seeds from %llu, batch %d, "
      "features %s)\n",
      cfg.seeds, static_cast<unsigned long long>(cfg.seed_base), cfg.batch,
      cfg.host_features ? ("host plan on " + host::describe_machine().name).c_str() : "of the table");
  for (const auto& label : cfg.strategies) {
    std::printf("  %-22s %s\n", label.c_str(), trials_text(median(median_by_workload[label]), smallest).c_str());
  }
  if (median_by_workload.count(kModelGuided) && median_by_workload.count("random")) {
    const double mg = median(median_by_workload[kModelGuided]);
    const double rnd = median(median_by_workload["random"]);
    std::printf("\n%s: %.0f trials (goal <= 64); random / %s = %.2fx (goal >= 2x)\n", kModelGuided.c_str(), mg,
                kModelGuided.c_str(), rnd / mg);
  }
  return 0;
}

}  // namespace
}  // namespace atvoss::bench

int main(int argc, char** argv) {
  atvoss::bench::Config cfg;
  CLI::App app{"atvoss host tuning-quality benchmark: strategies on recorded CPU kernel landscapes"};
  app.add_option("--seeds", cfg.seeds, "seeds per strategy and workload")->check(CLI::PositiveNumber);
  app.add_option("--seed-base", cfg.seed_base, "first seed (seeds are base..base+seeds-1)");
  app.add_option("--batch", cfg.batch, "proposals per round")->check(CLI::Range(1, 400));
  app.add_option("--data", cfg.data, "directory of the <workload>.csv recordings");
  app.add_option("--strategies", cfg.strategies, "comma-separated labels (strategy[-xgboost|-linear])")->delimiter(',');
  app.add_option("--workloads", cfg.workloads, "only workloads whose name contains this");
  app.add_option("--set", cfg.set, "workload set of bench/host_spaces.hpp")->check(CLI::IsMember({"dev", "heldout"}));
  app.add_option("--csv", cfg.csv, "write one row per run to this CSV file");
  app.add_flag("--host-features", cfg.host_features,
               "strategies see the host kernel on this machine, as a live tune does (run on the recording's CPU)");
  app.add_flag("--no-heuristic", cfg.no_heuristic, "no analytic heuristic before the first fit");
  return atvoss::tools::run_cli(app, argc, argv, [&] { return atvoss::bench::run(cfg); });
}
