// The built-in strategies' registry entries, for the registry's start (strategy_registry.cpp),
// each defined beside its strategy. Private to search/: users go through make_strategy().
#pragma once

#include <array>
#include <string_view>

#include "search/strategy_registry.hpp"

namespace atvoss::search {

// The ensemble's arms (EnsembleConfig::ensemble_arms), in the order of the per-arm arrays
// of its saved state.
inline constexpr std::array<std::string_view, 3> kEnsembleArms = {"model", "tpe", "evolution"};

// Fills the entry's check_config and default_config from the strategy's Config type.
template <class Config>
void takes_config(StrategyEntry& e) {
  e.check_config = [](const Json& config) { (void)Config::from_json(config); };
  e.default_config = [] { return Config{}.to_json(); };
}

StrategyEntry random_strategy();
StrategyEntry grid_strategy();
StrategyEntry evolutionary_strategy();
StrategyEntry model_guided_strategy();
StrategyEntry ensemble_strategy();
StrategyEntry tpe_strategy();

}  // namespace atvoss::search
