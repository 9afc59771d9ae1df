// Recorded-spaces benchmark: search strategies on the four brute-forced Kernel Tuner GPU
// spaces (data/recorded-spaces). A measurement is the recorded time (no noise);
// absent configurations are never proposed (the space's check rejects them, as Kernel
// Tuner's restrictions do); failed ones count as evaluations. Reported: mean fraction of
// the optimum (optimum / best found) after 25, 50, 100, 200 and 400 evaluations, averaged
// over seeds and then over the four spaces, next to the published figures of that README.
// Target (issue 4): >= 0.95 at 100 evaluations for the default strategy; the bar to beat on
// these four spaces is Optuna TPE's 0.984.
// Tuning of the defaults was done with --seed-base 1001; reports use --seed-base 1.
//
// Usage: bench_recorded_spaces [--seeds 10] [--seed-base 1] [--batch 4]
//        [--strategies random,evolutionary,model-guided-xgboost,...] [--csv out.csv] [--data DIR]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include <CLI/CLI.hpp>

#include "core/recorded_space.hpp"
#include "search/search_strategy.hpp"
#include "simulator/presets.hpp"
#include "tools/cli_common.hpp"

namespace atvoss::bench {
namespace {

const std::vector<int> kBudgets = {25, 50, 100, 200, 400};
const std::vector<std::string> kSpaces = {"convolution-RTX_3090", "pnpoly-RTX_3090", "gemm-RTX_3090",
                                          "dedispersion_milo-A4000"};

struct Config {
  int seeds = 10;
  std::uint64_t seed_base = 1;
  int batch = 4;
  std::vector<std::string> strategies = {"random", "evolutionary", "model-guided-xgboost",
                                         "model-guided-linear", "ensemble-xgboost"};
  std::string csv;
  std::string data = std::string(ATVOSS_DATA_DIR) + "/recorded-spaces";
  int model_threads = 1;
  search::StrategyOptions defaults;  // tuning knobs exposed as flags (defaults: the library's)
};

void add_flags(CLI::App& app, Config& cfg) {
  app.add_option("--seeds", cfg.seeds, "seeds per strategy and space")->check(CLI::PositiveNumber);
  app.add_option("--seed-base", cfg.seed_base, "first seed (seeds are base..base+seeds-1)");
  app.add_option("--batch", cfg.batch, "proposals per round")->check(CLI::Range(1, 400));
  app.add_option("--strategies", cfg.strategies, "comma-separated labels (strategy[-xgboost|-linear])")
      ->delimiter(',');
  app.add_option("--csv", cfg.csv, "write one row per run to this CSV file");
  app.add_option("--data", cfg.data, "directory holding the .json.gz spaces");
  app.add_option("--model-threads", cfg.model_threads, "XGBoost threads")->check(CLI::Range(1, 64));
  auto& d = cfg.defaults;
  app.add_option("--min-train", d.min_train_samples, "successful trials before the first fit");
  app.add_option("--epsilon", d.epsilon, "random share of each model-guided batch");
  app.add_option("--diversity", d.diversity_knobs, "knobs batch members must differ in");
  app.add_option("--model-population", d.model_population, "candidates evolved per round");
  app.add_option("--generations", d.model_generations, "generations per round");
  app.add_option("--retrain", d.retrain_fraction, "refit when new trials >= this fraction");
  app.add_option("--population", d.population, "evolutionary parents");
}

std::pair<std::string, std::string> split_label(const std::string& label) {
  for (const std::string kind : {"xgboost", "linear"}) {
    const std::string suffix = "-" + kind;
    if (label.size() > suffix.size() && label.compare(label.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return {label.substr(0, label.size() - suffix.size()), kind};
    }
  }
  return {label, "xgboost"};
}

// Best-so-far fraction of the optimum after each evaluation.
std::vector<double> run_one(const RecordedSpace& rs, const std::string& path, const std::string& label,
                            std::uint64_t seed, const Config& cfg) {
  const auto [name, model] = split_label(label);
  search::StrategyOptions o = cfg.defaults;
  o.seed = seed;
  o.workload = Workload::from_json(Json{{"op", "recorded"}, {"table", path}});
  o.target = simulator::preset("ascend910b");  // unused by generic features, but required
  o.cost_model = model;
  o.model_threads = cfg.model_threads;
  auto strategy = search::make_strategy(name, rs.space(), o);
  const int budget = kBudgets.back();
  const double optimum = *rs.optimum_us();
  std::vector<double> curve;
  double best = HUGE_VAL;
  while (static_cast<int>(curve.size()) < budget) {
    const auto want = static_cast<std::size_t>(std::min(cfg.batch, budget - static_cast<int>(curve.size())));
    const auto batch = strategy->propose(want);
    if (batch.empty()) break;
    std::vector<search::Trial> results;
    for (const auto& s : batch) {
      const auto m = rs.measure(s);
      results.push_back({s, m.status, m.time_us});
      if (m.ok()) best = std::min(best, m.time_us);
      curve.push_back(std::isfinite(best) ? optimum / best : 0.0);
    }
    strategy->update(results);
  }
  return curve;
}

double at(const std::vector<double>& curve, int k) {
  if (curve.empty()) return 0;
  return curve[std::min<std::size_t>(curve.size(), static_cast<std::size_t>(k)) - 1];
}

void print_header(const char* first) {
  std::printf("%-26s %-22s", first, "strategy");
  for (int b : kBudgets) std::printf(" %6d", b);
  std::printf(" %8s\n", "sec/run");
}

int run(const Config& cfg) {
  std::ofstream csv;
  if (!cfg.csv.empty()) {
    csv.open(cfg.csv);
    if (!csv) throw Error(ErrorKind::io, "cannot write --csv file '" + cfg.csv + "'");
    csv << "space,strategy,seed";
    for (int b : kBudgets) csv << ",frac_at_" << b;
    csv << '\n';
  }
  std::map<std::string, std::map<int, double>> mean_over_spaces;
  print_header("space");
  for (const auto& space : kSpaces) {
    const std::string path = cfg.data + "/" + space + ".json.gz";
    const auto rs = RecordedSpace::load(path);
    for (const auto& label : cfg.strategies) {
      std::map<int, double> sum;
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < cfg.seeds; ++i) {
        const std::uint64_t seed = cfg.seed_base + static_cast<std::uint64_t>(i);
        const auto curve = run_one(*rs, path, label, seed, cfg);
        if (csv) csv << space << ',' << label << ',' << seed;
        for (int b : kBudgets) {
          sum[b] += at(curve, b);
          if (csv) csv << ',' << at(curve, b);
        }
        if (csv) csv << '\n';
      }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%-26s %-22s", space.c_str(), label.c_str());
      for (int b : kBudgets) {
        std::printf(" %6.3f", sum[b] / cfg.seeds);
        mean_over_spaces[label][b] += sum[b] / cfg.seeds / static_cast<double>(kSpaces.size());
      }
      std::printf(" %8.2f\n", secs / cfg.seeds);
      std::fflush(stdout);
    }
  }
  std::printf("\nMean fraction of optimum over the four spaces (%d seeds from %llu)\n", cfg.seeds,
              static_cast<unsigned long long>(cfg.seed_base));
  print_header("");
  for (const auto& label : cfg.strategies) {
    std::printf("%-26s %-22s", "mean", label.c_str());
    for (int b : kBudgets) std::printf(" %6.3f", mean_over_spaces[label][b]);
    std::printf("\n");
  }
  std::printf("%-26s %-22s  0.813  0.896  0.938  0.967  0.985   (Schoonhoven et al. 2022)\n", "published",
              "best per budget");
  std::printf("%-26s %-22s  0.761  0.811  0.858  0.892  0.921   (Schoonhoven et al. 2022)\n", "published",
              "random sampling");
  std::printf("%-26s %-22s      -      -  0.984      -      -   (shared README, 3 seeds)\n", "Optuna TPE",
              "these four spaces");
  return 0;
}

}  // namespace
}  // namespace atvoss::bench

int main(int argc, char** argv) {
  atvoss::bench::Config cfg;
  CLI::App app{"atvoss recorded-spaces benchmark: strategies on four real Kernel Tuner GPU spaces"};
  atvoss::bench::add_flags(app, cfg);
  return atvoss::tools::run_cli(app, argc, argv, [&] { return atvoss::bench::run(cfg); });
}
