// The cost-model registry (model_registry.hpp) over core's NamedRegistry.
#include "costmodel/model_registry.hpp"

#include "core/error.hpp"
#include "core/named_registry.hpp"
#include "costmodel/internal/model_kinds.hpp"

namespace atvoss::costmodel {
namespace {

std::unique_ptr<CostModel> make_xgboost(const ModelOptions& o) {
  if (o.objective != "rank:pairwise" && o.objective != "reg:squarederror") {
    throw_bad_input("cost model: unknown objective '" + o.objective + "'; expected rank:pairwise or reg:squarederror");
  }
  if (o.rounds < 1 || o.max_depth < 1 || !(o.eta > 0) || o.nthread < 1) {
    throw_bad_input("cost model: 'rounds', 'max_depth', 'eta' and 'nthread' must be positive");
  }
  return make_xgboost_model(o);
}

std::vector<CostModelEntry> built_ins() {
  return {
      {"xgboost", "gradient-boosted trees, rank:pairwise grouped by workload (XGBoost C API)", make_xgboost},
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

NamedRegistry<CostModelEntry>& registry() {
  static NamedRegistry<CostModelEntry> r(built_ins());
  return r;
}

}  // namespace

void register_cost_model(CostModelEntry entry) {
  if (entry.name.empty()) throw_bad_input("register_cost_model: field 'name' must not be empty");
  if (!entry.make) throw_bad_input("register_cost_model: field 'make' must be set");
  if (registry().is_built_in(entry.name)) {
    throw_bad_input("register_cost_model: field 'name': '" + entry.name + "' is a built-in cost model");
  }
  registry().add(std::move(entry));
}

bool unregister_cost_model(const std::string& name) { return registry().remove(name); }

std::optional<CostModelEntry> registered_cost_model(const std::string& name) { return registry().find(name); }

std::vector<std::string> cost_model_names() {
  std::vector<std::string> names;
  for (const auto& e : *registry().all()) names.push_back(e.name);
  return names;
}

std::string cost_model_list() {
  std::string out;
  for (const auto& n : cost_model_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void require_cost_model(const std::string& name, const std::string& field) {
  if (registered_cost_model(name)) return;
  throw_bad_input(field + " must name a registered cost model (" + cost_model_list() + "), got '" + name + "'");
}

}  // namespace atvoss::costmodel
