// The cost-model registry (model_registry.hpp): built-in entries first, then a
// name -> entry map under a mutex.
#include "costmodel/model_registry.hpp"

#include <map>
#include <mutex>

#include "core/error.hpp"
#include "costmodel/internal/model_kinds.hpp"

namespace atvoss::costmodel {
namespace {

std::unique_ptr<CostModel> make_xgboost(const ModelOptions& o) {
  if (o.objective != "rank:pairwise" && o.objective != "reg:squarederror") {
    throw_bad_input("cost model: unknown objective '" + o.objective +
                    "'; expected rank:pairwise or reg:squarederror");
  }
  if (o.rounds < 1 || o.max_depth < 1 || !(o.eta > 0) || o.nthread < 1) {
    throw_bad_input("cost model: 'rounds', 'max_depth', 'eta' and 'nthread' must be positive");
  }
  return make_xgboost_model(o);
}

std::vector<CostModelEntry> built_ins() {
  return {
      {"xgboost", "gradient-boosted trees, rank:pairwise grouped by workload (XGBoost C API)",
       make_xgboost},
      {"xgboost-reg", "XGBoost regressing the normalised throughput (reg:squarederror)",
       [](const ModelOptions& o) {
         ModelOptions reg = o;
         reg.objective = "reg:squarederror";
         return make_xgboost(reg);
       }},
      {"linear", "ridge regression on standardised features",
       [](const ModelOptions& o) -> std::unique_ptr<CostModel> {
         if (!(o.ridge_lambda >= 0)) throw_bad_input("cost model: 'ridge_lambda' must be >= 0");
         return make_linear_model(o);
       }},
      {"heuristic", "analytic roofline estimate of the kernel plan, no training",
       [](const ModelOptions&) { return make_heuristic_model(); }},
  };
}

struct Registry {
  std::mutex mutex;
  const std::vector<CostModelEntry> built_in = built_ins();
  std::map<std::string, CostModelEntry> added;
};

Registry& registry() {
  static Registry r;
  return r;
}

const CostModelEntry* built_in(const Registry& r, const std::string& name) {
  for (const auto& e : r.built_in) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace

void register_cost_model(CostModelEntry entry) {
  if (entry.name.empty()) throw_bad_input("register_cost_model: field 'name' must not be empty");
  if (!entry.make) throw_bad_input("register_cost_model: field 'make' must be set");
  Registry& r = registry();
  if (built_in(r, entry.name)) {
    throw_bad_input("register_cost_model: field 'name': '" + entry.name + "' is a built-in cost model");
  }
  std::lock_guard lock(r.mutex);
  r.added[entry.name] = std::move(entry);
}

bool unregister_cost_model(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.added.erase(name) != 0;
}

std::optional<CostModelEntry> registered_cost_model(const std::string& name) {
  Registry& r = registry();
  if (const CostModelEntry* e = built_in(r, name)) return *e;
  std::lock_guard lock(r.mutex);
  const auto it = r.added.find(name);
  if (it == r.added.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> cost_model_names() {
  Registry& r = registry();
  std::vector<std::string> names;
  for (const auto& e : r.built_in) names.push_back(e.name);
  std::lock_guard lock(r.mutex);
  for (const auto& [name, e] : r.added) names.push_back(name);
  return names;
}

std::string cost_model_list() {
  std::string out;
  for (const auto& n : cost_model_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void require_cost_model(const std::string& name, const std::string& field) {
  if (registered_cost_model(name)) return;
  throw_bad_input(field + " must name a registered cost model (" + cost_model_list() + "), got '" +
                  name + "'");
}

}  // namespace atvoss::costmodel
