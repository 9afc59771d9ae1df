// Constructors of the concrete strategies, for make_strategy() (search_strategy.cpp).
// Private to search/: users go through the factory.
#pragma once

#include <array>
#include <memory>
#include <string_view>

#include "search/search_strategy.hpp"

namespace atvoss::search {

// The ensemble's arms (StrategyOptions::ensemble_arms), in the order of the per-arm arrays
// of its saved state.
inline constexpr std::array<std::string_view, 3> kEnsembleArms = {"model", "tpe", "evolution"};

std::unique_ptr<SearchStrategy> make_random_search(const ScheduleSpace& space, const StrategyOptions& o);
std::unique_ptr<SearchStrategy> make_grid_search(const ScheduleSpace& space, const StrategyOptions& o);
std::unique_ptr<SearchStrategy> make_evolutionary_search(const ScheduleSpace& space, const StrategyOptions& o);
std::unique_ptr<SearchStrategy> make_model_guided_search(const ScheduleSpace& space, const StrategyOptions& o);
std::unique_ptr<SearchStrategy> make_tpe_search(const ScheduleSpace& space, const StrategyOptions& o);
std::unique_ptr<SearchStrategy> make_ensemble_search(const ScheduleSpace& space, const StrategyOptions& o);

}  // namespace atvoss::search
