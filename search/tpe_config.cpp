#include "search/tpe_config.hpp"

#include "search/internal/config_reader.hpp"

namespace atvoss::search {

void TpeConfig::read(ConfigReader& r) {
  r.integer("tpe_startup", tpe_startup, 1);
  r.fraction("tpe_gamma", tpe_gamma, 0, 1, true);
  r.integer("tpe_good_max", tpe_good_max, 1);
  r.at_least("tpe_bandwidth", tpe_bandwidth, 0, true);
  r.integer("tpe_categorical_max", tpe_categorical_max, 0);
  r.at_least("tpe_prior_weight", tpe_prior_weight, 0, true);
  r.integer("tpe_candidates", tpe_candidates, 1);
  r.fraction("tpe_local_share", tpe_local_share);
  r.fraction("tpe_univariate_share", tpe_univariate_share);
  r.integer("tpe_local_top", tpe_local_top, 1);
  r.fraction("tpe_local_wide", tpe_local_wide);
  r.fraction("tpe_local_pair", tpe_local_pair);
  r.integer("tpe_stall", tpe_stall, 0);
  r.fraction("epsilon", epsilon);
  r.boolean("heuristic_before_fit", heuristic_before_fit);
  r.at_least("prior_weight", prior_weight, 0);
  r.fraction("mutation_doubling", mutation_doubling);
}

void TpeConfig::write(Json& out) const {
  out["tpe_startup"] = tpe_startup;
  out["tpe_gamma"] = tpe_gamma;
  out["tpe_good_max"] = tpe_good_max;
  out["tpe_bandwidth"] = tpe_bandwidth;
  out["tpe_categorical_max"] = tpe_categorical_max;
  out["tpe_prior_weight"] = tpe_prior_weight;
  out["tpe_candidates"] = tpe_candidates;
  out["tpe_local_share"] = tpe_local_share;
  out["tpe_univariate_share"] = tpe_univariate_share;
  out["tpe_local_top"] = tpe_local_top;
  out["tpe_local_wide"] = tpe_local_wide;
  out["tpe_local_pair"] = tpe_local_pair;
  out["tpe_stall"] = tpe_stall;
  out["epsilon"] = epsilon;
  out["heuristic_before_fit"] = heuristic_before_fit;
  out["prior_weight"] = prior_weight;
  out["mutation_doubling"] = mutation_doubling;
}

TpeConfig TpeConfig::from_json(const Json& config) { return read_config<TpeConfig>(config, "tpe strategy_config"); }

Json TpeConfig::to_json() const { return write_config(*this); }

}  // namespace atvoss::search
