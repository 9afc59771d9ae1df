#include "costmodel/cost_model.hpp"

#include "core/error.hpp"
#include "costmodel/internal/model_kinds.hpp"

namespace atvoss::costmodel {

std::vector<double> CostModel::predict(const Workload& workload, const Target& target,
                                       std::span<const Schedule> schedules) const {
  return predict_features(featurize(workload, target, schedules));
}

std::unique_ptr<CostModel> make_cost_model(const ModelOptions& o) {
  if (o.kind == "linear") {
    if (!(o.ridge_lambda >= 0)) throw_bad_input("cost model: 'ridge_lambda' must be >= 0");
    return make_linear_model(o);
  }
  if (o.kind == "heuristic") return make_heuristic_model();
  if (o.kind != "xgboost") {
    throw_bad_input("cost model: unknown kind '" + o.kind +
                    "'; expected xgboost, xgboost-reg, linear or heuristic");
  }
  if (o.objective != "rank:pairwise" && o.objective != "reg:squarederror") {
    throw_bad_input("cost model: unknown objective '" + o.objective +
                    "'; expected rank:pairwise or reg:squarederror");
  }
  if (o.rounds < 1 || o.max_depth < 1 || !(o.eta > 0) || o.nthread < 1) {
    throw_bad_input("cost model: 'rounds', 'max_depth', 'eta' and 'nthread' must be positive");
  }
  return make_xgboost_model(o);
}

std::unique_ptr<CostModel> make_cost_model(const std::string& kind, std::uint64_t seed) {
  ModelOptions options;
  options.kind = kind;
  options.seed = seed;
  if (kind == "xgboost-reg") {
    options.kind = "xgboost";
    options.objective = "reg:squarederror";
  }
  return make_cost_model(options);
}

}  // namespace atvoss::costmodel
