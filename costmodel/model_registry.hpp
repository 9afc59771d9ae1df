// Cost-model registry: the cost models that a job spec, a CLI (atvoss-tune --cost-model)
// or a model-guided strategy may name, each registered by name with its factory.
// make_cost_model() (cost_model.hpp) looks the kind up here, so a model added with
// register_cost_model() is usable wherever a cost-model name is, without editing a
// switch. Built in: xgboost, xgboost-reg, linear, heuristic (the analytic roofline
// estimate). Thread-safety: every function may be called from any thread; make is
// called outside the registry's lock.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/cost_model.hpp"

namespace atvoss::costmodel {

struct CostModelEntry {
  std::string name;
  std::string description;  // one line, for --help and error messages
  // Builds an untrained model; bad_input naming the option if options do not suit it.
  std::function<std::unique_ptr<CostModel>(const ModelOptions&)> make;
};

// Adds entry, replacing a registered one of the same name. bad_input if the name is
// empty, a built-in model's, or make is empty.
void register_cost_model(CostModelEntry entry);
// Removes a registered model; false if none had that name (built-ins cannot be removed).
bool unregister_cost_model(const std::string& name);
std::optional<CostModelEntry> registered_cost_model(const std::string& name);
// Every name, built-ins first (in the order above), then registered ones by name.
std::vector<std::string> cost_model_names();
// "xgboost, xgboost-reg, linear, heuristic, ...": for messages that list the choices.
std::string cost_model_list();
// bad_input "<field> must name a registered cost model (list), got 'name'" if name is
// not registered: how job specs and CLIs check the name before anything runs.
void require_cost_model(const std::string& name, const std::string& field);

}  // namespace atvoss::costmodel
