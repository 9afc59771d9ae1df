#include "costmodel/cost_model.hpp"

#include "core/error.hpp"
#include "costmodel/model_registry.hpp"

namespace atvoss::costmodel {

std::vector<double> CostModel::predict(const Workload& workload, const Target& target,
                                       std::span<const Schedule> schedules) const {
  return predict_features(featurize(workload, target, schedules));
}

std::unique_ptr<CostModel> make_cost_model(const ModelOptions& o) {
  const auto entry = registered_cost_model(o.kind);
  if (!entry) {
    throw_bad_input("cost model: unknown kind '" + o.kind + "'; expected one of " + cost_model_list());
  }
  return entry->make(o);
}

std::unique_ptr<CostModel> make_cost_model(const std::string& kind, std::uint64_t seed) {
  ModelOptions options;
  options.kind = kind;
  options.seed = seed;
  return make_cost_model(options);
}

}  // namespace atvoss::costmodel
