// make_strategy(): name -> strategy, after checking the options every strategy relies on.
#include "search/search_strategy.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "search/internal/strategies.hpp"
#include "search/strategy_registry.hpp"

namespace atvoss::search {
namespace {

void check_options(const StrategyOptions& o) {
  const auto fail = [](const std::string& field, const std::string& expected) {
    throw_bad_input("search options: field '" + field + "' must be " + expected);
  };
  if (o.population < 2) fail("population", ">= 2");
  if (o.tournament < 1) fail("tournament", ">= 1");
  if (!(o.crossover_rate >= 0 && o.crossover_rate <= 1)) fail("crossover_rate", "in [0, 1]");
  if (!(o.mutation_rate >= 0 && o.mutation_rate <= 1)) fail("mutation_rate", "in [0, 1]");
  if (!(o.mutation_doubling >= 0 && o.mutation_doubling <= 1)) fail("mutation_doubling", "in [0, 1]");
  if (o.model_population < 2) fail("model_population", ">= 2");
  if (o.model_generations < 0) fail("model_generations", ">= 0");
  if (!(o.seed_from_measured >= 0 && o.seed_from_measured <= 1)) fail("seed_from_measured", "in [0, 1]");
  if (!(o.epsilon >= 0 && o.epsilon <= 1)) fail("epsilon", "in [0, 1]");
  if (!(o.model_far_share >= 0 && o.model_far_share <= 1)) fail("model_far_share", "in [0, 1]");
  if (o.model_stall < 0) fail("model_stall", ">= 0");
  if (o.diversity_knobs < 1) fail("diversity_knobs", ">= 1");
  if (o.model_threads < 0) fail("model_threads", ">= 0");
  if (o.min_train_samples < 1) fail("min_train_samples", ">= 1");
  if (!(o.retrain_fraction >= 0)) fail("retrain_fraction", ">= 0");
  if (o.tpe_startup < 1) fail("tpe_startup", ">= 1");
  if (!(o.tpe_gamma > 0 && o.tpe_gamma <= 1)) fail("tpe_gamma", "in (0, 1]");
  if (o.tpe_good_max < 1) fail("tpe_good_max", ">= 1");
  if (!(o.tpe_bandwidth > 0)) fail("tpe_bandwidth", "> 0");
  if (!(o.tpe_prior_weight > 0)) fail("tpe_prior_weight", "> 0");
  if (o.tpe_candidates < 1) fail("tpe_candidates", ">= 1");
  if (!(o.tpe_univariate_share >= 0 && o.tpe_univariate_share <= 1)) fail("tpe_univariate_share", "in [0, 1]");
  if (o.tpe_categorical_max < 0) fail("tpe_categorical_max", ">= 0");
  if (o.tpe_local_top < 1) fail("tpe_local_top", ">= 1");
  if (!(o.tpe_local_wide >= 0 && o.tpe_local_wide <= 1)) fail("tpe_local_wide", "in [0, 1]");
  if (!(o.tpe_local_pair >= 0 && o.tpe_local_pair <= 1)) fail("tpe_local_pair", "in [0, 1]");
  if (o.tpe_stall < 0) fail("tpe_stall", ">= 0");
  if (!(o.tpe_local_share >= 0 && o.tpe_local_share <= 1)) fail("tpe_local_share", "in [0, 1]");
  if (!(o.prior_weight >= 0)) fail("prior_weight", ">= 0");
  std::string arms;
  for (const auto a : kEnsembleArms) arms += (arms.empty() ? "" : ", ") + std::string(a);
  if (o.ensemble_arms.empty()) fail("ensemble_arms", "a non-empty list of " + arms);
  for (std::size_t i = 0; i < o.ensemble_arms.size(); ++i) {
    const auto& a = o.ensemble_arms[i];
    if (std::find(kEnsembleArms.begin(), kEnsembleArms.end(), a) == kEnsembleArms.end()) {
      fail("ensemble_arms", "a list of " + arms + " (got '" + a + "')");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (o.ensemble_arms[j] == a) fail("ensemble_arms", "a list without repeats (got '" + a + "' twice)");
    }
  }
}

}  // namespace

const std::vector<std::string>& built_in_strategy_names() {
  static const std::vector<std::string> names = {"random", "grid", "evolutionary", "model-guided", "ensemble", "tpe"};
  return names;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names = built_in_strategy_names();
  for (const auto& e : registered_strategies()) names.push_back(e.name);
  return names;
}

std::unique_ptr<SearchStrategy> make_strategy(const std::string& name, const ScheduleSpace& space,
                                              const StrategyOptions& options) {
  check_options(options);
  if (name == "random") return make_random_search(space, options);
  if (name == "grid") return make_grid_search(space, options);
  if (name == "evolutionary") return make_evolutionary_search(space, options);
  if (name == "model-guided") return make_model_guided_search(space, options);
  if (name == "ensemble") return make_ensemble_search(space, options);
  if (name == "tpe") return make_tpe_search(space, options);
  if (const auto entry = registered_strategy(name)) {
    if (entry->can_apply && !entry->can_apply(options.workload, options.target)) {
      throw_bad_input("search strategy '" + name + "' does not apply to op '" + options.workload.op() +
                      "' on target '" + options.target.name + "'");
    }
    return entry->make(space, options);
  }
  std::string list;
  for (const auto& n : strategy_names()) list += (list.empty() ? "" : ", ") + n;
  throw_bad_input("unknown search strategy '" + name + "'; expected one of " + list);
}

}  // namespace atvoss::search
