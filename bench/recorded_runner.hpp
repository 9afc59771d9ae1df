// One search run on a recorded Kernel Tuner space, with Kernel Tuner's accounting, shared by
// bench_recorded_spaces (per-space tables, warm start, proposal time) and bench_lofo
// (leave-one-family-out tuning of the defaults). A measurement is the recorded time (no
// noise); absent configurations are never proposed (the space's check rejects them) and are
// not evaluations; failed ones are evaluations. Fraction of optimum = optimum / best found.
// Header-only: bench programs are single files.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/recorded_space.hpp"
#include "search/search_strategy.hpp"
#include "search/strategy_registry.hpp"
#include "simulator/presets.hpp"

namespace atvoss::bench {

// The nine recorded spaces and their kernel families (data/recorded-spaces/README.md).
inline const std::vector<std::string>& all_spaces() {
  static const std::vector<std::string> s = {
      "convolution-RTX_3090",    "pnpoly-RTX_3090",        "gemm-RTX_3090",
      "dedispersion_milo-A4000", "convolution-RTX_Titan",  "pnpoly-RTX_Titan",
      "gemm-RTX_Titan",          "convolution_milo-W6600", "dedispersion_milo-W6600"};
  return s;
}
inline std::string family_of(const std::string& space) { return space.substr(0, space.find('-')); }

struct RunResult {
  std::vector<double> curve;          // best-so-far fraction of optimum after each evaluation
  double ms_per_proposal = 0;         // wall time of propose() per proposed schedule
  std::vector<search::Trial> trials;  // every evaluation, in order (a prior for transfer)
};

// Label "strategy[-xgboost|-linear]" -> strategy name and cost model.
inline std::pair<std::string, std::string> split_label(const std::string& label) {
  for (const std::string kind : {"xgboost", "linear"}) {
    const std::string suffix = "-" + kind;
    if (label.size() > suffix.size() && label.compare(label.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return {label.substr(0, label.size() - suffix.size()), kind};
    }
  }
  return {label, "xgboost"};
}

// A bench run's search: the context, and settings that apply to every strategy taking them.
struct SearchSetup {
  search::TuneContext context;
  Json settings = Json::object();
};

// The settings strategy `name` takes (its default_config's keys): one bench run compares
// strategies under one set of settings. A value out of range fails in make_strategy.
inline Json config_for(const std::string& name, const Json& settings) {
  const auto entry = search::registered_strategy(name);
  const Json keys = entry && entry->default_config ? entry->default_config() : Json::object();
  Json out = Json::object();
  for (const auto& [key, value] : settings.items()) {
    if (keys.contains(key)) out[key] = value;
  }
  return out;
}

// bad_input naming the first setting no strategy of `labels` takes (a typo would otherwise
// change nothing).
inline void require_settings_taken(const Json& settings, const std::vector<std::string>& labels) {
  for (const auto& [key, value] : settings.items()) {
    bool taken = false;
    for (const auto& label : labels) taken = taken || config_for(split_label(label).first, {{key, value}}).size() > 0;
    if (!taken) throw_bad_input("--set: no strategy of this run takes '" + key + "'");
  }
}

inline search::TuneContext context_for(const std::string& path, const std::string& label, search::TuneContext o,
                                       std::uint64_t seed) {
  o.seed = seed;
  o.workload = Workload::from_json(Json{{"op", "recorded"}, {"table", path}});
  o.target = simulator::preset("ascend910b");  // unused by generic features, but required
  o.cost_model = split_label(label).second;
  return o;
}

// features_from_context: the strategy sees the setup's workload and target (features of the
// kernel the table was measured from, as a live tune would) instead of the recorded-table
// workload.
inline RunResult run_search(const RecordedSpace& rs, const std::string& path, const std::string& label,
                            const SearchSetup& o, int budget, int batch, bool features_from_context = false) {
  search::TuneContext context = context_for(path, label, o.context, o.context.seed);
  if (features_from_context) {
    context.workload = o.context.workload;
    context.target = o.context.target;
  }
  const std::string name = split_label(label).first;
  auto strategy = search::make_strategy(name, rs.space(), context, config_for(name, o.settings));
  const double optimum = *rs.optimum_us();
  RunResult out;
  double best = HUGE_VAL, propose_s = 0;
  std::size_t proposed = 0;
  while (static_cast<int>(out.curve.size()) < budget) {
    const auto want = static_cast<std::size_t>(std::min(batch, budget - static_cast<int>(out.curve.size())));
    const auto t0 = std::chrono::steady_clock::now();
    const auto schedules = strategy->propose(want);
    propose_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    proposed += schedules.size();
    if (schedules.empty()) break;
    std::vector<search::Trial> results;
    for (const auto& s : schedules) {
      const auto m = rs.measure(s);
      results.push_back({s, m.status, m.time_us});
      if (m.ok()) best = std::min(best, m.time_us);
      out.curve.push_back(std::isfinite(best) ? optimum / best : 0.0);
    }
    strategy->update(results);
    out.trials.insert(out.trials.end(), results.begin(), results.end());
  }
  out.ms_per_proposal = proposed ? 1000 * propose_s / static_cast<double>(proposed) : 0;
  return out;
}

// Fraction after k evaluations (the last value if the run stopped early).
inline double frac_at(const std::vector<double>& curve, int k) {
  if (curve.empty()) return 0;
  return curve[std::min<std::size_t>(curve.size(), static_cast<std::size_t>(k)) - 1];
}

// Evaluations needed to reach frac of the optimum (1-based); curve.size() + 1 if never.
inline int trials_to(const std::vector<double>& curve, double frac) {
  for (std::size_t i = 0; i < curve.size(); ++i) {
    if (curve[i] >= frac) return static_cast<int>(i + 1);
  }
  return static_cast<int>(curve.size()) + 1;
}

// Every recorded configuration as a trial (a brute-forced table used as a prior).
inline std::vector<search::Trial> table_trials(const RecordedSpace& rs) {
  std::vector<search::Trial> out;
  for (const auto& s : rs.configurations()) {
    const auto m = rs.measure(s);
    out.push_back({s, m.status, m.time_us});
  }
  return out;
}

}  // namespace atvoss::bench

namespace atvoss::bench {

// Which other tables of the data folder a run learns from (TuneContext::prior_spaces):
// none; every other table (other kernels, and this kernel on other devices: what a database
// of earlier tunings holds); or only other kernel families (the leave-one-family-out report).
enum class PriorSpaces { none, others, other_families };

inline PriorSpaces parse_prior_spaces(const std::string& s) {
  if (s == "none") return PriorSpaces::none;
  if (s == "others") return PriorSpaces::others;
  if (s == "other-families") return PriorSpaces::other_families;
  throw_bad_input("--prior-spaces: expected none, others or other-families, got '" + s + "'");
}

// Every table of `dir` (*.json.gz, by name) as a prior space, loaded once per folder.
inline const std::map<std::string, search::PriorSpace>& tables_in(const std::string& dir) {
  static std::map<std::string, std::map<std::string, search::PriorSpace>> loaded;
  auto [it, fresh] = loaded.try_emplace(dir);
  if (!fresh) return it->second;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string file = e.path().filename().string();
    const std::string suffix = ".json.gz";
    if (file.size() <= suffix.size() || file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    const std::string name = file.substr(0, file.size() - suffix.size());
    const auto rs = RecordedSpace::load(e.path().string());
    it->second[name] = search::PriorSpace{name, rs->space().knobs(), table_trials(*rs)};
  }
  return it->second;
}

// The prior spaces of a run on `space` under `mode`: the tables of `dirs` (a name found in
// two folders is taken from the first), never the space itself.
inline std::vector<search::PriorSpace> prior_spaces_for(const std::vector<std::string>& dirs, const std::string& space,
                                                        PriorSpaces mode) {
  std::vector<search::PriorSpace> out;
  if (mode == PriorSpaces::none) return out;
  std::map<std::string, const search::PriorSpace*> by_name;
  for (const auto& dir : dirs) {
    for (const auto& [name, prior] : tables_in(dir)) by_name.emplace(name, &prior);
  }
  for (const auto& [name, prior] : by_name) {
    if (name == space) continue;
    if (mode == PriorSpaces::other_families && family_of(name) == family_of(space)) continue;
    out.push_back(*prior);
  }
  return out;
}

// The folders a bench learns from: its data folder, then the shipped recorded spaces (the
// library atvoss knows), so a folder of other tables is tuned with both.
inline std::vector<std::string> prior_dirs(const std::string& data) {
  const std::string shipped = std::string(ATVOSS_DATA_DIR) + "/recorded-spaces";
  if (std::filesystem::equivalent(data, shipped)) return {data};
  return {data, shipped};
}

}  // namespace atvoss::bench
