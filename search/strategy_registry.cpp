// The run-time strategy registry (strategy_registry.hpp): a name -> entry map under a mutex.
#include "search/strategy_registry.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "core/error.hpp"

namespace atvoss::search {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, StrategyEntry> entries;
};

Registry& registry() {
  static Registry r;
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
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.entries[entry.name] = std::move(entry);
}

bool unregister_strategy(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.entries.erase(name) != 0;
}

std::optional<StrategyEntry> registered_strategy(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto it = r.entries.find(name);
  if (it == r.entries.end()) return std::nullopt;
  return it->second;
}

std::vector<StrategyEntry> registered_strategies() {
  std::vector<StrategyEntry> out;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (const auto& [name, e] : r.entries) out.push_back(e);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const StrategyEntry& a, const StrategyEntry& b) { return a.priority > b.priority; });
  return out;
}

}  // namespace atvoss::search
