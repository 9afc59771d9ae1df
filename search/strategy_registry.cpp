// The run-time strategy registry (strategy_registry.hpp) over core's NamedRegistry.
#include "search/strategy_registry.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/named_registry.hpp"

namespace atvoss::search {
namespace {

// The built-in strategies are made by make_strategy() itself; the registry holds only
// the added ones.
NamedRegistry<StrategyEntry>& registry() {
  static NamedRegistry<StrategyEntry> r;
  return r;
}

bool is_built_in(const std::string& name) {
  const auto& names = built_in_strategy_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

void register_strategy(StrategyEntry entry) {
  if (entry.name.empty()) throw_bad_input("register_strategy: field 'name' must not be empty");
  if (is_built_in(entry.name)) {
    throw_bad_input("register_strategy: field 'name': '" + entry.name + "' is a built-in strategy");
  }
  if (!entry.make) throw_bad_input("register_strategy: field 'make' must be set");
  registry().add(std::move(entry));
}

bool unregister_strategy(const std::string& name) { return registry().remove(name); }

std::optional<StrategyEntry> registered_strategy(const std::string& name) { return registry().find(name); }

std::vector<StrategyEntry> registered_strategies() {
  std::vector<StrategyEntry> out = *registry().all();
  std::stable_sort(out.begin(), out.end(),
                   [](const StrategyEntry& a, const StrategyEntry& b) { return a.priority > b.priority; });
  return out;
}

}  // namespace atvoss::search
