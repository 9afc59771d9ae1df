// EnsembleConfig: the JSON config of the "ensemble" strategy (a bandit over the cost model's,
// TPE's and evolution's proposals, search/ensemble_search.cpp): ensemble_arms, and the keys of
// model_guided_config.hpp (the model arm, with the evolution keys the evolution arm breeds
// by) and of tpe_config.hpp (the tpe arm). A key both arms read (epsilon,
// heuristic_before_fit, mutation_doubling) sets both. A key none takes is refused.
#pragma once

#include <string>
#include <vector>

#include "core/json.hpp"
#include "search/model_guided_config.hpp"
#include "search/tpe_config.hpp"

namespace atvoss::search {

struct EnsembleConfig {
  // The bandit's arms, each at most once: "model" (the cost model's picks), "tpe" (the
  // Parzen-estimator proposals) and "evolution" (breeding the measured trials). Default: model
  // and tpe (tpe's local refinement in place of plain breeding). The tuner's default strategy
  // is still model-guided: leave-one-family-out chose the model arm alone over this pair
  // (docs/decisions/search-defaults.md).
  std::vector<std::string> ensemble_arms = {"model", "tpe"};
  ModelGuidedConfig model;
  TpeConfig tpe;

  // bad_input naming the field (context "ensemble strategy_config").
  static EnsembleConfig from_json(const Json& config);
  Json to_json() const;
};

// The arms' names, in the order of the per-arm arrays of the ensemble's saved state.
const std::vector<std::string>& ensemble_arm_names();

}  // namespace atvoss::search
