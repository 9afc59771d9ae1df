#include "search/tpe_config.hpp"

#include "search/internal/config_reader.hpp"

namespace atvoss::search {

namespace {

// Every key of the config, with its range: read by ConfigReader, written by ConfigWriter.
template <class Config, class Io>
void visit_tpe_fields(Config& c, Io& io) {
  io.integer("tpe_startup", c.tpe_startup, 1);
  io.fraction("tpe_gamma", c.tpe_gamma, 0, 1, true);
  io.integer("tpe_good_max", c.tpe_good_max, 1);
  io.at_least("tpe_bandwidth", c.tpe_bandwidth, 0, true);
  io.integer("tpe_categorical_max", c.tpe_categorical_max, 0);
  io.at_least("tpe_prior_weight", c.tpe_prior_weight, 0, true);
  io.integer("tpe_candidates", c.tpe_candidates, 1);
  io.fraction("tpe_local_share", c.tpe_local_share);
  io.fraction("tpe_univariate_share", c.tpe_univariate_share);
  io.integer("tpe_local_top", c.tpe_local_top, 1);
  io.fraction("tpe_local_wide", c.tpe_local_wide);
  io.fraction("tpe_local_pair", c.tpe_local_pair);
  io.integer("tpe_stall", c.tpe_stall, 0);
  io.fraction("epsilon", c.epsilon);
  io.boolean("heuristic_before_fit", c.heuristic_before_fit);
  io.at_least("prior_weight", c.prior_weight, 0);
  io.fraction("mutation_doubling", c.mutation_doubling);
}

}  // namespace

void TpeConfig::read(ConfigReader& r) { visit_tpe_fields(*this, r); }

void TpeConfig::write(Json& out) const {
  ConfigWriter w(out);
  visit_tpe_fields(*this, w);
}

TpeConfig TpeConfig::from_json(const Json& config) { return read_config<TpeConfig>(config, "tpe strategy_config"); }

Json TpeConfig::to_json() const { return write_config(*this); }

}  // namespace atvoss::search
