// make_strategy(): name -> the registry's entry -> its config checked -> the strategy.
#include "search/search_strategy.hpp"

#include "core/error.hpp"
#include "search/internal/config_reader.hpp"
#include "search/strategy_registry.hpp"

namespace atvoss::search {
namespace {

StrategyEntry entry_named(const std::string& name) {
  if (auto entry = registered_strategy(name)) return std::move(*entry);
  std::string list;
  for (const auto& n : strategy_names()) list += (list.empty() ? "" : ", ") + n;
  throw_bad_input("unknown search strategy '" + name + "'; expected one of " + list);
}

void check_config(const StrategyEntry& entry, const Json& config) {
  if (entry.check_config) {
    entry.check_config(config);
  } else {
    ConfigReader(config, entry.name + " strategy_config").finish();
  }
}

}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names = built_in_strategy_names();
  for (const auto& e : registered_strategies()) {
    if (!e.built_in) names.push_back(e.name);
  }
  return names;
}

void check_strategy_config(const std::string& name, const Json& config) { check_config(entry_named(name), config); }

std::unique_ptr<SearchStrategy> make_strategy(const std::string& name, const ScheduleSpace& space,
                                              const TuneContext& context, const Json& config) {
  const StrategyEntry entry = entry_named(name);
  check_config(entry, config);
  if (entry.can_apply && !entry.can_apply(context.workload, context.target)) {
    throw_bad_input("search strategy '" + name + "' does not apply to op '" + context.workload.op() + "' on target '" +
                    context.target.name + "'");
  }
  return entry.make(space, context, config);
}

}  // namespace atvoss::search
