// Strategy registry: every search strategy by name — the built-in ones (registered when the
// registry is first used) and those added at run time (the Python package's policies,
// python/). make_strategy() builds from it and strategy_names() lists it, so a registered
// strategy is usable wherever a strategy name is: tune_single, job specs, the task
// scheduler's sessions.
// Thread-safety: every function may be called from any thread; make(), check_config() and
// can_apply() are called outside the registry's lock.
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
  // Builds the strategy for one space from the run's context and the strategy's JSON config
  // (already passed through check_config).
  std::function<std::unique_ptr<SearchStrategy>(const ScheduleSpace&, const TuneContext&, const Json& config)> make;
  // bad_input naming the field if config is not one this strategy takes; empty: it takes
  // none (only {} or null).
  std::function<void(const Json& config)> check_config;
  // Every key the strategy takes, at its default (empty: it takes none). What a sweep may
  // vary (bench_lofo) and what a user may set, from the strategy itself.
  std::function<Json()> default_config;
  // Whether make() uses the context's cost model (model_factory, transfer_groups): the tuner
  // builds them only then.
  bool uses_cost_model = false;
  // Whether make() reads the context's prior_trials for this workload; empty: never. The
  // tuner queries the database for them only then.
  std::function<bool(const Workload&)> uses_prior;
  // Set by the registry for the strategies it starts with; those cannot be replaced or removed.
  bool built_in = false;
};

// Adds entry, replacing a registered one of the same name. bad_input if the name is empty,
// a built-in strategy's, or make is empty.
void register_strategy(StrategyEntry entry);
// Removes a registered strategy; false if none had that name. bad_input for a built-in.
bool unregister_strategy(const std::string& name);
std::optional<StrategyEntry> registered_strategy(const std::string& name);
// Every strategy, built-ins included: highest priority first, then built-ins in their order
// (built_in_strategy_names()), then the rest by name.
std::vector<StrategyEntry> registered_strategies();

}  // namespace atvoss::search
