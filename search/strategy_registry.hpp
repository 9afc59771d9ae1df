// Strategy registry: search strategies added at run time next to the built-in ones of
// make_strategy(), by name (the Python package's policies, python/, register here).
// make_strategy() consults it after the built-ins and strategy_names() lists it, so a
// registered strategy is usable wherever a strategy name is: tune_single, job specs,
// the task scheduler's sessions.
// Thread-safety: every function may be called from any thread; make() and can_apply()
// are called outside the registry's lock.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/search_strategy.hpp"

namespace atvoss::search {

struct StrategyEntry {
  std::string name;
  // Higher first in registered_strategies(): how a caller that picks "the best applicable
  // strategy" orders them. Default 0.
  int priority = 0;
  // Whether the strategy applies to a (workload, target); empty: it applies everywhere.
  // make_strategy() refuses (bad_input) a pair it does not apply to.
  std::function<bool(const Workload&, const Target&)> can_apply;
  // Builds the strategy for one space; StrategyOptions carries workload, target and seed.
  std::function<std::unique_ptr<SearchStrategy>(const ScheduleSpace&, const StrategyOptions&)> make;
};

// Adds entry, replacing a registered one of the same name. bad_input if the name is empty,
// a built-in strategy's, or make is empty.
void register_strategy(StrategyEntry entry);
// Removes a registered strategy; false if none had that name.
bool unregister_strategy(const std::string& name);
std::optional<StrategyEntry> registered_strategy(const std::string& name);
// Every registered strategy, highest priority first, then by name.
std::vector<StrategyEntry> registered_strategies();

}  // namespace atvoss::search
