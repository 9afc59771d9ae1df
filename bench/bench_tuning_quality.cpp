// Tuning-quality benchmark: how few measurements each search strategy needs on the quality
// suite (quality_suite.hpp). Every strategy x seed x case runs propose -> simulate (noise on)
// -> update for --budget trials. "Best so far" after k trials is the noise-free time of the
// schedule with the best *measured* time among the first k (what a tuner would ship),
// reported as optimum / that time (1.0 = found the optimum). Per run: that fraction at
// 16..512 trials, and the trials needed to reach 95% and 99%. Per strategy: the median over
// cases of the per-case mean (fractions) or per-case median over seeds (trials).
// Targets: model-guided XGBoost reaches 95% in <= 128 trials on the suite median,
// with >= 3x fewer trials than random and >= 1.5x fewer than evolutionary.
//
// Usage: bench_tuning_quality [--seeds 5] [--seed-base 1] [--budget 512] [--batch 16]
//        [--strategies random,grid,...] [--cases substring] [--csv out.csv] [--cache-dir D]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>

#include "bench/quality_suite.hpp"
#include "search/search_strategy.hpp"
#include "search/strategy_registry.hpp"
#include "simulator/simulator.hpp"
#include "tools/cli_common.hpp"

namespace atvoss::bench {
namespace {

const std::vector<int> kCheckpoints = {16, 32, 64, 128, 256, 512};

struct Config {
  std::string suite = "suite";
  int seeds = 5;
  std::uint64_t seed_base = 1;
  int budget = 512;
  int batch = 16;
  double noise = 0.02;
  std::vector<std::string> strategies = {"random", "grid", "evolutionary", "model-guided-xgboost",
                                         "model-guided-linear"};
  std::string cases;
  std::string csv;
  std::string cache_dir = default_cache_dir();
  int threads = 2;
  int model_threads = 1;
};

struct RunResult {
  std::vector<double> curve;  // fraction of optimum after trial i+1
  double seconds = 0;
  int trials_to(double frac) const {  // 1-based; budget + 1 if never reached
    for (std::size_t i = 0; i < curve.size(); ++i) {
      if (curve[i] >= frac) return static_cast<int>(i + 1);
    }
    return static_cast<int>(curve.size()) + 1;
  }
  double at(int k) const {
    if (curve.empty()) return 0;
    return curve[std::min<std::size_t>(curve.size(), static_cast<std::size_t>(k)) - 1];
  }
};

struct Label {
  std::string strategy, model;
  bool heuristic = true;
};

bool strip_suffix(std::string& s, const std::string& suffix) {
  if (s.size() <= suffix.size() || s.compare(s.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  s.resize(s.size() - suffix.size());
  return true;
}

// "model-guided-xgboost" -> strategy "model-guided" with cost model "xgboost";
// a "-nh" suffix turns off the analytic heuristic before the first fit (learned model only).
Label split_label(std::string label) {
  Label l{label, "xgboost", true};
  if (strip_suffix(label, "-nh")) l.heuristic = false;
  for (const char* kind : {"xgboost", "linear"}) {
    if (strip_suffix(label, std::string("-") + kind)) l.model = kind;
  }
  l.strategy = label;
  return l;
}

RunResult run_one(const SuiteCase& c, const GroundTruth& truth, const std::string& label, std::uint64_t seed,
                  const Config& cfg) {
  const auto [name, model, heuristic] = split_label(label);
  search::TuneContext o;
  o.seed = seed;
  o.workload = c.workload;
  o.target = c.target;
  o.cost_model = model;
  o.model_threads = cfg.model_threads;
  Json config = Json::object();
  const auto entry = search::registered_strategy(name);  // the strategies that rank before a fit take the key
  if (entry && entry->default_config && entry->default_config().contains("heuristic_before_fit")) {
    config["heuristic_before_fit"] = heuristic;
  }
  const auto start = std::chrono::steady_clock::now();
  auto strategy = search::make_strategy(name, truth.space, o, config);
  RunResult r;
  double best_measured = HUGE_VAL, best_true = HUGE_VAL;
  while (static_cast<int>(r.curve.size()) < cfg.budget) {
    const auto want = static_cast<std::size_t>(std::min(cfg.batch, cfg.budget - static_cast<int>(r.curve.size())));
    const auto batch = strategy->propose(want);
    if (batch.empty()) break;
    std::vector<search::Trial> results;
    for (const auto& s : batch) {
      simulator::SimOptions so;
      so.noise = cfg.noise;
      so.seed = seed * 1000003u + r.curve.size();
      const auto m = simulator::simulate(c.target, c.workload, s, so);
      results.push_back({s, m.status, m.time_us});
      if (m.ok() && m.time_us < best_measured) {
        best_measured = m.time_us;
        best_true = truth.true_time(s);
      }
      r.curve.push_back(std::isfinite(best_true) ? truth.optimum_us / best_true : 0.0);
    }
    strategy->update(results);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? NAN : s / static_cast<double>(v.size());
}

std::string trials_text(double t, int budget) {
  if (t > budget) return ">" + std::to_string(budget);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", t);
  return buf;
}

struct Summary {                                    // one strategy over the suite
  std::map<int, std::vector<double>> frac_by_case;  // checkpoint -> per-case mean over seeds
  std::vector<double> t95_by_case, t99_by_case;     // per-case median over seeds
  double seconds = 0;
  int runs = 0;
};

void print_case_header() {
  std::printf("%-34s %-22s", "case", "strategy");
  for (int k : kCheckpoints) std::printf(" %6s", ("@" + std::to_string(k)).c_str());
  std::printf(" %6s %6s %7s\n", "t95", "t99", "sec/run");
}

void add_flags(CLI::App& app, Config& cfg) {
  app.add_option("--seeds", cfg.seeds, "seeds per strategy and case")->check(CLI::PositiveNumber);
  app.add_option("--seed-base", cfg.seed_base, "first seed (seeds are base..base+seeds-1)");
  app.add_option("--budget", cfg.budget, "trials per run")->check(CLI::Range(1, 100000));
  app.add_option("--batch", cfg.batch, "proposals per round")->check(CLI::Range(1, 4096));
  app.add_option("--noise", cfg.noise, "measurement noise sigma")->check(CLI::Range(0.0, 0.5));
  app.add_option("--strategies", cfg.strategies, "comma-separated strategy labels")->delimiter(',');
  app.add_option("--cases", cfg.cases, "run only cases whose name contains this");
  app.add_option("--suite", cfg.suite, "suite (defaults are chosen here) or heldout (shapes no one tuned on)");
  app.add_option("--csv", cfg.csv, "write one row per run to this CSV file");
  app.add_option("--cache-dir", cfg.cache_dir, "ground-truth cache directory");
  app.add_option("--model-threads", cfg.model_threads, "XGBoost threads (1: no OpenMP spinning on a busy machine)")
      ->check(CLI::Range(1, 64));
  app.add_option("--threads", cfg.threads, "threads for enumerating ground truth")->check(CLI::Range(1, 64));
}

int run(const Config& cfg) {
  std::ofstream csv;
  if (!cfg.csv.empty()) {
    csv.open(cfg.csv);
    if (!csv) throw Error(ErrorKind::io, "cannot write --csv file '" + cfg.csv + "'");
    csv << "case,strategy,seed";
    for (int k : kCheckpoints) csv << ",frac_at_" << k;
    csv << ",trials_to_95,trials_to_99,seconds\n";
  }
  std::map<std::string, Summary> summary;
  print_case_header();
  for (const auto& c : quality_suite(cfg.suite)) {
    if (!cfg.cases.empty() && c.name.find(cfg.cases) == std::string::npos) continue;
    const auto t0 = std::chrono::steady_clock::now();
    const GroundTruth truth = ground_truth(c, cfg.cache_dir, cfg.threads);
    std::fprintf(stderr, "# %s: %llu points, %zu valid, optimum %.2f us (truth in %.1f s)\n", c.name.c_str(),
                 static_cast<unsigned long long>(truth.space.size()), truth.valid_points, truth.optimum_us,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    for (const auto& label : cfg.strategies) {
      std::map<int, std::vector<double>> fracs;
      std::vector<double> t95, t99;
      double secs = 0;
      for (int i = 0; i < cfg.seeds; ++i) {
        const std::uint64_t seed = cfg.seed_base + static_cast<std::uint64_t>(i);
        const RunResult r = run_one(c, truth, label, seed, cfg);
        for (int k : kCheckpoints) fracs[k].push_back(r.at(k));
        t95.push_back(r.trials_to(0.95));
        t99.push_back(r.trials_to(0.99));
        secs += r.seconds;
        if (csv) {
          csv << c.name << ',' << label << ',' << seed;
          for (int k : kCheckpoints) csv << ',' << r.at(k);
          csv << ',' << r.trials_to(0.95) << ',' << r.trials_to(0.99) << ',' << r.seconds << '\n';
        }
      }
      auto& s = summary[label];
      std::printf("%-34s %-22s", c.name.c_str(), label.c_str());
      for (int k : kCheckpoints) {
        std::printf(" %6.3f", mean(fracs[k]));
        s.frac_by_case[k].push_back(mean(fracs[k]));
      }
      s.t95_by_case.push_back(median(t95));
      s.t99_by_case.push_back(median(t99));
      s.seconds += secs;
      s.runs += cfg.seeds;
      std::printf(" %6s %6s %7.2f\n", trials_text(median(t95), cfg.budget).c_str(),
                  trials_text(median(t99), cfg.budget).c_str(), secs / cfg.seeds);
      std::fflush(stdout);
    }
  }
  std::printf("\nSuite median over cases (fractions: per-case mean over %d seeds; trials: per-case median)\n",
              cfg.seeds);
  print_case_header();
  for (const auto& label : cfg.strategies) {
    auto& s = summary[label];
    std::printf("%-34s %-22s", "SUITE MEDIAN", label.c_str());
    for (int k : kCheckpoints) std::printf(" %6.3f", median(s.frac_by_case[k]));
    std::printf(" %6s %6s %7.2f\n", trials_text(median(s.t95_by_case), cfg.budget).c_str(),
                trials_text(median(s.t99_by_case), cfg.budget).c_str(), s.runs ? s.seconds / s.runs : 0.0);
  }
  const auto t95 = [&](const std::string& l) { return median(summary[l].t95_by_case); };
  if (summary.count("model-guided-xgboost")) {
    const double x = t95("model-guided-xgboost");
    std::printf("\nmodel-guided-xgboost reaches 95%% in %s trials (target <= 128)\n",
                trials_text(x, cfg.budget).c_str());
    for (const auto& [other, need] : {std::pair<std::string, double>{"random", 3.0}, {"evolutionary", 1.5}}) {
      if (summary.count(other)) {
        std::printf("  %s / model-guided-xgboost trials to 95%%: %s%.2fx (target >= %.1fx)\n", other.c_str(),
                    t95(other) > cfg.budget ? ">=" : "", t95(other) / x, need);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace atvoss::bench

int main(int argc, char** argv) {
  atvoss::bench::Config cfg;
  CLI::App app{"atvoss tuning-quality benchmark: search strategies on the quality suite"};
  atvoss::bench::add_flags(app, cfg);
  return atvoss::tools::run_cli(app, argc, argv, [&] { return atvoss::bench::run(cfg); });
}
