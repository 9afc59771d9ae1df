// Leave-one-family-out tuning of a strategy's defaults on the nine recorded spaces: a
// default tuned on the space it is reported on is not a result. The spaces form five
// kernel families (convolution, convolution_milo, dedispersion_milo, gemm, pnpoly). For each
// family F, every configuration of the grid is run on the spaces of the other four families
// with the tuning seeds; the one with the best score (mean over those families, each family
// the mean of its spaces, of the fraction of optimum averaged over 25/50/100/200
// evaluations) is then run on F's spaces with the report seeds. The rotated figures (each
// space reported under the defaults chosen without its family) are printed and written as
// CSV rows labelled "<strategy>-lofo", in bench_recorded_spaces' format, for
// bench/peer/report.py. Also printed: the configuration all five families choose, which
// is what the library ships as its default.
//
// With --prior-spaces every run learns from the tables of the other families that share
// enough knobs with its space (TuneContext::prior_spaces), and while choosing for a family
// F no run learns from F's tables either: F stays unseen until it is reported.
//
// Usage: bench_lofo [--strategy tpe] [--seeds 5] [--seed-base 1] [--tune-seeds 3]
//        [--tune-seed-base 1001] [--grid "tpe_gamma=0.1,0.2;tpe_bandwidth=0.1,0.2"] [--csv out.csv]
//        [--prior-spaces]
// A grid axis is a key of the strategy's own config (search/*_config.hpp), checked by the
// strategy before any run, or ensemble_tpe / ensemble_evolution (an arm beside the model arm).
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>

#include "bench/recorded_runner.hpp"
#include "tools/cli_common.hpp"

namespace atvoss::bench {
namespace {

const std::vector<int> kReportBudgets = {10, 25, 50, 100, 200};
const std::vector<int> kScoreBudgets = {25, 50, 100, 200};

struct Config {
  std::string strategy = "tpe";
  int seeds = 5;
  std::uint64_t seed_base = 1;
  int tune_seeds = 3;
  std::uint64_t tune_seed_base = 1001;
  int batch = 1;
  std::string grid = "tpe_gamma=0.1,0.15,0.25;tpe_bandwidth=0.1,0.2,0.35;tpe_local_share=0,0.25,0.5";
  std::string csv;
  std::string data = std::string(ATVOSS_DATA_DIR) + "/recorded-spaces";
  bool prior_spaces = false;  // --prior-spaces: learn from the tables of other families
};

// Ensemble arms as grid axes: 1 adds the arm to the model arm (so "ensemble_tpe=0,1" rotates
// between the cost model alone and the model+tpe bandit). Every other axis is a key of the
// strategy's own config (search/*_config.hpp).
bool is_arm_axis(const std::string& field) { return field == "ensemble_tpe" || field == "ensemble_evolution"; }

using Setting = std::vector<std::pair<std::string, double>>;

// The strategy's config for one grid point; a whole value is an integer (integer keys refuse 3.0).
Json config_of(const Setting& s) {
  Json config = Json::object();
  Json arms = Json::array({"model"});  // the grid's arm flags add to it
  bool any_arm = false;
  for (const auto& [f, v] : s) {
    if (is_arm_axis(f)) {
      any_arm = true;
      if (v != 0) arms.push_back(f.substr(std::string("ensemble_").size()));
    } else {
      config[f] = v == std::floor(v) && std::abs(v) < 1e15 ? Json(static_cast<long long>(v)) : Json(v);
    }
  }
  if (any_arm) config["ensemble_arms"] = arms;
  return config;
}

// "a=1,2;b=3" -> every combination, as (field, value) lists; each field checked against the
// strategy's config (bad_input naming it) before any run.
std::vector<Setting> expand_grid(const std::string& text, const std::string& strategy) {
  std::vector<Setting> out = {{}};
  std::stringstream axes(text);
  for (std::string axis; std::getline(axes, axis, ';');) {
    const auto eq = axis.find('=');
    const std::string field = axis.substr(0, eq);
    if (eq == std::string::npos) throw_bad_input("--grid: expected FIELD=V1,V2 in '" + axis + "'");
    std::vector<Setting> next;
    std::stringstream values(axis.substr(eq + 1));
    for (std::string v; std::getline(values, v, ',');) {
      std::size_t used = 0;
      double value = 0;
      try {
        value = std::stod(v, &used);
      } catch (const std::exception&) {
      }
      if (used == 0 || used != v.size()) throw_bad_input("--grid: field '" + field + "': '" + v + "' is not a number");
      if (!is_arm_axis(field)) search::check_strategy_config(strategy, config_of({{field, value}}));
      for (auto s : out) {
        s.emplace_back(field, value);
        next.push_back(std::move(s));
      }
    }
    out = std::move(next);
  }
  return out;
}

std::string describe(const Setting& s) {
  std::string out;
  for (const auto& [f, v] : s) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s=%g", out.empty() ? "" : " ", f.c_str(), v);
    out += buf;
  }
  return out;
}

SearchSetup apply(const Setting& s) {
  SearchSetup o;
  o.context.model_threads = 1;
  o.settings = config_of(s);
  return o;
}

struct SpaceRuns {
  std::vector<std::vector<double>> curves;
  std::vector<double> ms;
};

// With --prior-spaces, the tables a run on `space` learns from: those of other families that
// share enough knobs with it, never of `held_out` (the fold's family, unseen while choosing).
std::vector<search::PriorSpace> priors_for(const Config& cfg, const std::string& space, const std::string& held_out) {
  if (!cfg.prior_spaces) return {};
  const auto rs = RecordedSpace::load(cfg.data + "/" + space + ".json.gz");
  const auto& knobs = rs->space().knobs();
  auto out = prior_spaces_for({cfg.data}, space, PriorSpaces::other_families);
  std::erase_if(out, [&](const search::PriorSpace& p) {
    return family_of(p.name) == held_out || !search::shares_enough(p.knobs, knobs);
  });
  return out;
}

SpaceRuns run_space(const Config& cfg, const std::string& space, const Setting& s, std::uint64_t base, int seeds,
                    const std::vector<search::PriorSpace>& priors = {}) {
  const std::string path = cfg.data + "/" + space + ".json.gz";
  const auto rs = RecordedSpace::load(path);
  SpaceRuns out;
  for (int i = 0; i < seeds; ++i) {
    auto o = apply(s);
    o.context.seed = base + static_cast<std::uint64_t>(i);
    o.context.prior_spaces = priors;
    auto r = run_search(*rs, path, cfg.strategy, o, kReportBudgets.back(), cfg.batch);
    out.curves.push_back(std::move(r.curve));
    out.ms.push_back(r.ms_per_proposal);
  }
  return out;
}

double score(const SpaceRuns& runs) {
  double sum = 0;
  for (const auto& c : runs.curves) {
    for (int b : kScoreBudgets) sum += frac_at(c, b);
  }
  return sum / static_cast<double>(runs.curves.size() * kScoreBudgets.size());
}

// Mean over families other than `held_out` (each the mean of its spaces).
double training_score(const std::map<std::string, double>& per_space, const std::string& held_out) {
  std::map<std::string, std::pair<double, int>> fam;
  for (const auto& [space, v] : per_space) {
    if (family_of(space) == held_out) continue;
    fam[family_of(space)].first += v;
    ++fam[family_of(space)].second;
  }
  double sum = 0;
  for (const auto& [f, acc] : fam) sum += acc.first / acc.second;
  return fam.empty() ? 0 : sum / static_cast<double>(fam.size());
}

std::size_t choose(const std::vector<std::map<std::string, double>>& scores, const std::string& held_out) {
  std::size_t best = 0;
  for (std::size_t c = 1; c < scores.size(); ++c) {
    if (training_score(scores[c], held_out) > training_score(scores[best], held_out)) best = c;
  }
  return best;
}

// Tuning scores of every grid point on every space, its runs learning from no table of
// `held_out` (with --prior-spaces); runs whose prior tables are the same are shared between folds.
std::vector<std::map<std::string, double>> tuning_scores(const Config& cfg, const std::vector<Setting>& grid,
                                                         const std::string& held_out) {
  static std::map<std::string, double> memo;  // by grid point, space and prior tables
  std::vector<std::map<std::string, double>> scores(grid.size());
  for (std::size_t c = 0; c < grid.size(); ++c) {
    for (const auto& space : all_spaces()) {
      if (family_of(space) == held_out) continue;
      const auto priors = priors_for(cfg, space, held_out);
      std::string key = std::to_string(c) + "/" + space;
      for (const auto& p : priors) key += "/" + p.name;
      auto it = memo.find(key);
      if (it == memo.end()) {
        it = memo.emplace(key, score(run_space(cfg, space, grid[c], cfg.tune_seed_base, cfg.tune_seeds, priors))).first;
      }
      scores[c][space] = it->second;
    }
    if (held_out.empty()) {
      std::printf("  [%zu] %-60s all-family score %.4f\n", c, describe(grid[c]).c_str(), training_score(scores[c], ""));
      std::fflush(stdout);
    }
  }
  return scores;
}

int run(const Config& cfg) {
  const auto grid = expand_grid(cfg.grid, split_label(cfg.strategy).first);
  std::printf("grid: %zu configurations x %zu spaces x %d tuning seeds (from %llu)%s\n", grid.size(),
              all_spaces().size(), cfg.tune_seeds, static_cast<unsigned long long>(cfg.tune_seed_base),
              cfg.prior_spaces ? ", learning from the tables of other families" : "");
  const auto scores = tuning_scores(cfg, grid, "");
  std::set<std::string> families;
  for (const auto& s : all_spaces()) families.insert(family_of(s));
  std::ofstream csv;
  if (!cfg.csv.empty()) {
    csv.open(cfg.csv);
    if (!csv) throw Error(ErrorKind::io, "cannot write --csv file '" + cfg.csv + "'");
    csv << "space,strategy,seed";
    for (int b : kReportBudgets) csv << ",frac_at_" << b;
    csv << ",ms_per_proposal\n";
  }
  std::printf("\nRotated leave-one-family-out (%d report seeds from %llu, batch %d)\n", cfg.seeds,
              static_cast<unsigned long long>(cfg.seed_base), cfg.batch);
  std::printf("%-26s %-45s", "held-out space", "defaults chosen on the other four families");
  for (int b : kReportBudgets) std::printf(" %6d", b);
  std::printf("\n");
  std::map<int, double> mean;
  for (const auto& fam : families) {
    const std::size_t c = choose(cfg.prior_spaces ? tuning_scores(cfg, grid, fam) : scores, fam);
    for (const auto& space : all_spaces()) {
      if (family_of(space) != fam) continue;
      const auto runs = run_space(cfg, space, grid[c], cfg.seed_base, cfg.seeds, priors_for(cfg, space, fam));
      std::printf("%-26s %-45s", space.c_str(), describe(grid[c]).c_str());
      for (int b : kReportBudgets) {
        double sum = 0;
        for (const auto& curve : runs.curves) sum += frac_at(curve, b);
        std::printf(" %6.3f", sum / cfg.seeds);
        mean[b] += sum / cfg.seeds / static_cast<double>(all_spaces().size());
      }
      std::printf("\n");
      for (std::size_t i = 0; i < runs.curves.size(); ++i) {
        if (!csv) break;
        csv << space << ',' << cfg.strategy << "-lofo," << cfg.seed_base + i;
        for (int b : kReportBudgets) csv << ',' << frac_at(runs.curves[i], b);
        csv << ',' << runs.ms[i] << '\n';
      }
    }
  }
  std::printf("%-26s %-45s", "mean (rotated)", "");
  for (int b : kReportBudgets) std::printf(" %6.3f", mean[b]);
  std::printf("\n\nChosen on all five families (the shipped default): %s\n",
              describe(grid[choose(scores, "")]).c_str());
  return 0;
}

}  // namespace
}  // namespace atvoss::bench

int main(int argc, char** argv) {
  atvoss::bench::Config cfg;
  CLI::App app{"leave-one-family-out tuning of a search strategy's defaults on the recorded spaces"};
  app.add_option("--strategy", cfg.strategy, "strategy label (as bench_recorded_spaces)");
  app.add_option("--seeds", cfg.seeds, "report seeds")->check(CLI::PositiveNumber);
  app.add_option("--seed-base", cfg.seed_base, "first report seed");
  app.add_option("--tune-seeds", cfg.tune_seeds, "tuning seeds")->check(CLI::PositiveNumber);
  app.add_option("--tune-seed-base", cfg.tune_seed_base, "first tuning seed");
  app.add_option("--batch", cfg.batch, "proposals per round")->check(CLI::Range(1, 400));
  app.add_option("--grid", cfg.grid, "field=v1,v2;field=... (fields: tpe_gamma, tpe_bandwidth, ...)");
  app.add_option("--csv", cfg.csv, "write the rotated report rows to this CSV file");
  app.add_option("--data", cfg.data, "directory holding the .json.gz spaces");
  app.add_flag("--prior-spaces", cfg.prior_spaces,
               "every run learns from the tables of other families (never the fold's)");
  return atvoss::tools::run_cli(app, argc, argv, [&] { return atvoss::bench::run(cfg); });
}
