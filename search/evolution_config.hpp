// EvolutionConfig: the JSON config of the "evolutionary" strategy, whose breeding the
// model-guided strategy's genetic steps and the ensemble's evolution arm share (and whose
// mutation_doubling TPE's local moves use). Keys, ranges and defaults below; a key the
// strategy does not take is refused (search/internal/config_reader.hpp).
#pragma once

#include <string>

#include "core/json.hpp"

namespace atvoss::search {

class ConfigReader;

struct EvolutionConfig {
  // Parents kept from the best measured schedules (elitism), >= 2. Larger explores more slowly.
  int population = 32;
  // Candidates per tournament, >= 1; larger selects more greedily.
  int tournament = 3;
  // Probability that a child's knob comes from the second parent (uniform crossover).
  double crossover_rate = 0.5;
  // Per-knob probability of moving to a neighbouring value (at least one knob always moves).
  double mutation_rate = 0.25;
  // Probability that a knob's mutation moves to the value twice or half its own when the
  // list holds one (otherwise it takes the neighbour step). Tile and block sizes are often
  // good at powers of two only, and on an arithmetic list (16, 32, 48, .., 256) a doubling
  // is many neighbour steps away, through values that may all be slow. 0: bench_lofo chose 0
  // in every fold (docs/decisions/search-defaults.md).
  double mutation_doubling = 0;

  // bad_input naming the field (context "evolutionary strategy_config") if a value is out of
  // range or a key unknown.
  static EvolutionConfig from_json(const Json& config);
  Json to_json() const;
  // The keys above, read into this config (for the configs that embed it).
  void read(ConfigReader& r);
  void write(Json& out) const;
};

}  // namespace atvoss::search
