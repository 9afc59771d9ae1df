// Recorded-spaces benchmark: search strategies on the nine brute-forced Kernel Tuner GPU
// spaces (data/recorded-spaces), with Kernel Tuner's accounting (bench/recorded_runner.hpp).
// Reported: mean fraction of the optimum after 10, 25, 50, 100, 200 evaluations per space
// and over spaces, and wall time per proposal. Peers (Optuna) run from bench/peer/run.sh on
// the same spaces, seeds and budgets; bench_lofo tunes defaults leave-one-family-out.
// Modes:
//   default        the table (and --csv one row per run)
//   --prior-from T warm start: each space X-<GPU> whose X-T exists gets X-T's trials as
//                  TuneContext::prior_trials (the whole table, or with --prior-trials N
//                  the N evaluations of a seeded run of the same strategy on X-T, as a
//                  database would hold them); spaces without one are skipped
//   --prior-spaces others|other-families
//                  the other tables of --data and of data/recorded-spaces as
//                  TuneContext::prior_spaces (every other table, or only those of other
//                  kernel families: leave-one-family-out)
//   --time-at N    proposal time after N observed trials (random recorded configurations)
// Tuning of defaults is done by bench_lofo on seeds 1001+; reports use --seed-base 1.
//
// Usage: bench_recorded_spaces [--seeds 5] [--seed-base 1] [--batch 1] [--budget 200]
//        [--spaces a,b] [--strategies tpe,model-guided-xgboost,...] [--csv out.csv]
//        [--prior-from RTX_3090 [--prior-trials 0]] [--prior-spaces others] [--time-at 1000] [--data DIR]
//        [--set KEY=VALUE]... (a strategy-config key, search/*_config.hpp, for every listed
//        strategy that takes it; VALUE is JSON: --set tpe_gamma=0.25 --set model_stall=0)
#include <cstdio>
#include <fstream>
#include <map>
#include <random>

#include <CLI/CLI.hpp>

#include "bench/recorded_runner.hpp"
#include "tools/cli_common.hpp"

namespace atvoss::bench {
namespace {

const std::vector<int> kBudgets = {10, 25, 50, 100, 200, 400};

struct Config {
  int seeds = 5;
  std::uint64_t seed_base = 1;
  int batch = 1;
  int budget = 200;
  std::vector<std::string> spaces = all_spaces();
  std::vector<std::string> strategies = {"tpe", "model-guided-xgboost", "evolutionary", "random"};
  std::string csv;
  std::string data = std::string(ATVOSS_DATA_DIR) + "/recorded-spaces";
  std::string prior_from;
  int prior_trials = 0;
  PriorSpaces prior_spaces = PriorSpaces::none;
  int time_at = 0;
  SearchSetup defaults;               // --model-threads and --set (defaults: the library's)
  std::vector<std::string> settings;  // --set KEY=VALUE
};

// "KEY=VALUE" pairs -> a JSON object (VALUE parsed as JSON, else kept as a string).
Json parse_settings(const std::vector<std::string>& pairs) {
  Json out = Json::object();
  for (const auto& p : pairs) {
    const auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0) throw_bad_input("--set: expected KEY=VALUE, got '" + p + "'");
    const std::string value = p.substr(eq + 1);
    out[p.substr(0, eq)] = Json::accept(value) ? Json::parse(value) : Json(value);
  }
  return out;
}

void add_flags(CLI::App& app, Config& cfg) {
  app.add_option("--seeds", cfg.seeds, "seeds per strategy and space")->check(CLI::PositiveNumber);
  app.add_option("--seed-base", cfg.seed_base, "first seed (seeds are base..base+seeds-1)");
  app.add_option("--batch", cfg.batch, "proposals per round")->check(CLI::Range(1, 400));
  app.add_option("--budget", cfg.budget, "evaluations per run")->check(CLI::Range(1, 400));
  app.add_option("--spaces", cfg.spaces, "comma-separated space names")->delimiter(',');
  app.add_option("--strategies", cfg.strategies, "comma-separated labels (strategy[-xgboost|-linear])")->delimiter(',');
  app.add_option("--csv", cfg.csv, "write one row per run to this CSV file");
  app.add_option("--data", cfg.data, "directory holding the .json.gz spaces");
  app.add_option("--prior-from", cfg.prior_from, "warm start from the same kernel on this GPU");
  app.add_option("--prior-trials", cfg.prior_trials, "prior = a run of this many evaluations (0: whole table)");
  app.add_option_function<std::string>(
         "--prior-spaces", [&cfg](const std::string& v) { cfg.prior_spaces = parse_prior_spaces(v); },
         "learn from the other tables of --data: none (default), others, other-families")
      ->type_name("MODE");
  app.add_option("--time-at", cfg.time_at, "time proposals after this many observed trials");
  auto& d = cfg.defaults.context;
  app.add_option("--model-threads", d.model_threads, "XGBoost threads")->check(CLI::Range(1, 64));
  d.model_threads = 1;
  app.add_option("--set", cfg.settings,
                 "KEY=VALUE: a strategy-config key (search/*_config.hpp) for every listed strategy taking it");
}

std::string path_of(const Config& cfg, const std::string& space) { return cfg.data + "/" + space + ".json.gz"; }

// The prior for a space under --prior-from; empty (skip the space) if it has none.
std::vector<search::Trial> prior_for(const Config& cfg, const std::string& space, const std::string& label,
                                     std::uint64_t seed, bool& has_prior) {
  has_prior = false;
  if (cfg.prior_from.empty()) return {};
  const std::string other = family_of(space) + "-" + cfg.prior_from;
  if (other == space) return {};
  std::shared_ptr<const RecordedSpace> rs;
  try {
    rs = RecordedSpace::load(path_of(cfg, other));
  } catch (const Error&) {
    return {};
  }
  has_prior = true;
  if (cfg.prior_trials == 0) return table_trials(*rs);
  SearchSetup o = cfg.defaults;
  o.context.seed = seed + 7919;  // a different run from the one being measured
  return run_search(*rs, path_of(cfg, other), label, o, cfg.prior_trials, cfg.batch).trials;
}

std::vector<int> budgets(const Config& cfg) {
  std::vector<int> b;
  for (int k : kBudgets) {
    if (k <= cfg.budget) b.push_back(k);
  }
  return b;
}

void print_header(const Config& cfg) {
  std::printf("%-26s %-22s", "space", "strategy");
  for (int b : budgets(cfg)) std::printf(" %6d", b);
  std::printf(" %9s\n", "ms/prop");
}

int run_table(const Config& cfg) {
  std::ofstream csv;
  if (!cfg.csv.empty()) {
    csv.open(cfg.csv);
    if (!csv) throw Error(ErrorKind::io, "cannot write --csv file '" + cfg.csv + "'");
    csv << "space,strategy,seed";
    for (int b : budgets(cfg)) csv << ",frac_at_" << b;
    csv << ",ms_per_proposal\n";
  }
  std::map<std::string, std::map<int, double>> mean;
  std::map<std::string, int> spaces_run;
  print_header(cfg);
  for (const auto& space : cfg.spaces) {
    const auto rs = RecordedSpace::load(path_of(cfg, space));
    for (const auto& label : cfg.strategies) {
      std::map<int, double> sum;
      double ms = 0;
      bool has_prior = cfg.prior_from.empty();
      const auto priors = prior_spaces_for(prior_dirs(cfg.data), space, cfg.prior_spaces);
      for (int i = 0; i < cfg.seeds; ++i) {
        SearchSetup o = cfg.defaults;
        o.context.seed = cfg.seed_base + static_cast<std::uint64_t>(i);
        if (!cfg.prior_from.empty()) o.context.prior_trials = prior_for(cfg, space, label, o.context.seed, has_prior);
        if (!has_prior) break;
        o.context.prior_spaces = priors;
        const auto r = run_search(*rs, path_of(cfg, space), label, o, cfg.budget, cfg.batch);
        ms += r.ms_per_proposal / cfg.seeds;
        if (csv) csv << space << ',' << label << (cfg.prior_from.empty() ? "" : "+prior") << ',' << o.context.seed;
        for (int b : budgets(cfg)) {
          sum[b] += frac_at(r.curve, b) / cfg.seeds;
          if (csv) csv << ',' << frac_at(r.curve, b);
        }
        if (csv) csv << ',' << r.ms_per_proposal << '\n';
      }
      if (!has_prior) continue;
      ++spaces_run[label];
      std::printf("%-26s %-22s", space.c_str(), label.c_str());
      for (int b : budgets(cfg)) {
        std::printf(" %6.3f", sum[b]);
        mean[label][b] += sum[b];
      }
      std::printf(" %9.2f\n", ms);
      std::fflush(stdout);
    }
  }
  std::printf("\nMean fraction of optimum over the spaces (%d seeds from %llu, batch %d%s)\n", cfg.seeds,
              static_cast<unsigned long long>(cfg.seed_base), cfg.batch,
              cfg.prior_from.empty() ? "" : (", prior from " + cfg.prior_from).c_str());
  print_header(cfg);
  for (const auto& label : cfg.strategies) {
    if (!spaces_run[label]) continue;
    std::printf("%-26s %-22s", "mean", label.c_str());
    for (int b : budgets(cfg)) std::printf(" %6.3f", mean[label][b] / spaces_run[label]);
    std::printf("\n");
  }
  return 0;
}

// Proposal time after time_at observed trials: observe that many recorded configurations
// (a seeded random sample), then time single proposals, each answered from the table.
int run_timing(const Config& cfg) {
  std::printf("%-26s %-22s %9s %12s %12s\n", "space", "strategy", "observed", "ms/proposal", "first ms");
  for (const auto& space : cfg.spaces) {
    const auto rs = RecordedSpace::load(path_of(cfg, space));
    auto table = table_trials(*rs);
    std::mt19937_64 rng(cfg.seed_base);
    std::shuffle(table.begin(), table.end(), rng);
    table.resize(std::min<std::size_t>(table.size(), static_cast<std::size_t>(cfg.time_at)));
    for (const auto& label : cfg.strategies) {
      const auto o = context_for(path_of(cfg, space), label, cfg.defaults.context, cfg.seed_base);
      const std::string name = split_label(label).first;
      auto strategy = search::make_strategy(name, rs->space(), o, config_for(name, cfg.defaults.settings));
      strategy->observe(table);
      // The first proposal after observing pays the model's first fit on all observed trials;
      // in a run that fit is repeated only when the trials grew by 20% (about every 200
      // proposals at 1000), so the first is reported apart from the steady state.
      constexpr int kRepeats = 50;
      double secs = 0, first = 0;
      for (int i = 0; i <= kRepeats; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto batch = strategy->propose(1);
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        (i == 0 ? first : secs) += took;
        std::vector<search::Trial> results;
        for (const auto& s : batch) {
          const auto m = rs->measure(s);
          results.push_back({s, m.status, m.time_us});
        }
        strategy->update(results);
      }
      std::printf("%-26s %-22s %9zu %12.2f %12.2f\n", space.c_str(), label.c_str(), table.size(),
                  1000 * secs / kRepeats, 1000 * first);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace atvoss::bench

int main(int argc, char** argv) {
  atvoss::bench::Config cfg;
  CLI::App app{"atvoss recorded-spaces benchmark: strategies on nine real Kernel Tuner GPU spaces"};
  atvoss::bench::add_flags(app, cfg);
  return atvoss::tools::run_cli(app, argc, argv, [&] {
    cfg.defaults.settings = atvoss::bench::parse_settings(cfg.settings);
    atvoss::bench::require_settings_taken(cfg.defaults.settings, cfg.strategies);
    return cfg.time_at > 0 ? atvoss::bench::run_timing(cfg) : atvoss::bench::run_table(cfg);
  });
}
