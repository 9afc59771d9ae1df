#include "search/model_guided_config.hpp"

#include "search/internal/config_reader.hpp"

namespace atvoss::search {

namespace {

// Every key of the config, with its range: read by ConfigReader, written by ConfigWriter.
template <class Config, class Io>
void visit_model_guided_fields(Config& c, Io& io) {
  io.embed(c.evolution);
  io.integer("model_population", c.model_population, 2);
  io.integer("model_generations", c.model_generations, 0);
  io.fraction("seed_from_measured", c.seed_from_measured);
  io.fraction("epsilon", c.epsilon);
  io.fraction("model_far_share", c.model_far_share);
  io.integer("model_stall", c.model_stall, 0);
  io.integer("diversity_knobs", c.diversity_knobs, 1);
  io.boolean("heuristic_before_fit", c.heuristic_before_fit);
  io.integer("min_train_samples", c.min_train_samples, 1);
  io.at_least("retrain_fraction", c.retrain_fraction, 0);
  io.at_least("prior_space_cap", c.prior_space_cap, 0);
  io.integer("prior_space_rows", c.prior_space_rows, 1);
}

}  // namespace

void ModelGuidedConfig::read(ConfigReader& r) { visit_model_guided_fields(*this, r); }

void ModelGuidedConfig::write(Json& out) const {
  ConfigWriter w(out);
  visit_model_guided_fields(*this, w);
}

ModelGuidedConfig ModelGuidedConfig::from_json(const Json& config) {
  return read_config<ModelGuidedConfig>(config, "model-guided strategy_config");
}

Json ModelGuidedConfig::to_json() const { return write_config(*this); }

}  // namespace atvoss::search
