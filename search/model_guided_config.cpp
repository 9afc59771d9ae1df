#include "search/model_guided_config.hpp"

#include "search/internal/config_reader.hpp"

namespace atvoss::search {

void ModelGuidedConfig::read(ConfigReader& r) {
  evolution.read(r);
  r.integer("model_population", model_population, 2);
  r.integer("model_generations", model_generations, 0);
  r.fraction("seed_from_measured", seed_from_measured);
  r.fraction("epsilon", epsilon);
  r.fraction("model_far_share", model_far_share);
  r.integer("model_stall", model_stall, 0);
  r.integer("diversity_knobs", diversity_knobs, 1);
  r.boolean("heuristic_before_fit", heuristic_before_fit);
  r.integer("min_train_samples", min_train_samples, 1);
  r.at_least("retrain_fraction", retrain_fraction, 0);
}

void ModelGuidedConfig::write(Json& out) const {
  evolution.write(out);
  out["model_population"] = model_population;
  out["model_generations"] = model_generations;
  out["seed_from_measured"] = seed_from_measured;
  out["epsilon"] = epsilon;
  out["model_far_share"] = model_far_share;
  out["model_stall"] = model_stall;
  out["diversity_knobs"] = diversity_knobs;
  out["heuristic_before_fit"] = heuristic_before_fit;
  out["min_train_samples"] = min_train_samples;
  out["retrain_fraction"] = retrain_fraction;
}

ModelGuidedConfig ModelGuidedConfig::from_json(const Json& config) {
  return read_config<ModelGuidedConfig>(config, "model-guided strategy_config");
}

Json ModelGuidedConfig::to_json() const { return write_config(*this); }

}  // namespace atvoss::search
