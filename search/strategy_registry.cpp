// The strategy registry (strategy_registry.hpp) over core's NamedRegistry, built-ins first.
#include "search/strategy_registry.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/named_registry.hpp"
#include "search/internal/strategies.hpp"

namespace atvoss::search {
namespace {

std::vector<StrategyEntry> built_in_entries() {
  std::vector<StrategyEntry> out = {random_strategy(),       grid_strategy(),     evolutionary_strategy(),
                                    model_guided_strategy(), ensemble_strategy(), tpe_strategy()};
  for (auto& e : out) e.built_in = true;
  return out;
}

NamedRegistry<StrategyEntry>& registry() {
  static NamedRegistry<StrategyEntry> r(built_in_entries());
  return r;
}

}  // namespace

const std::vector<std::string>& built_in_strategy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& e : built_in_entries()) out.push_back(e.name);
    return out;
  }();
  return names;
}

void register_strategy(StrategyEntry entry) {
  if (entry.name.empty()) throw_bad_input("register_strategy: field 'name' must not be empty");
  if (registry().is_built_in(entry.name)) {
    throw_bad_input("register_strategy: field 'name': '" + entry.name + "' is a built-in strategy");
  }
  if (!entry.make) throw_bad_input("register_strategy: field 'make' must be set");
  entry.built_in = false;
  registry().add(std::move(entry));
}

bool unregister_strategy(const std::string& name) {
  if (registry().is_built_in(name)) {
    throw_bad_input("unregister_strategy: '" + name + "' is a built-in strategy");
  }
  return registry().remove(name);
}

std::optional<StrategyEntry> registered_strategy(const std::string& name) { return registry().find(name); }

std::vector<StrategyEntry> registered_strategies() {
  std::vector<StrategyEntry> out = *registry().all();
  std::stable_sort(out.begin(), out.end(),
                   [](const StrategyEntry& a, const StrategyEntry& b) { return a.priority > b.priority; });
  return out;
}

}  // namespace atvoss::search
