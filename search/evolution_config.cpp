#include "search/evolution_config.hpp"

#include "search/internal/config_reader.hpp"

namespace atvoss::search {

namespace {

// Every key of the config, with its range: read by ConfigReader, written by ConfigWriter.
template <class Config, class Io>
void visit_evolution_fields(Config& c, Io& io) {
  io.integer("population", c.population, 2);
  io.integer("tournament", c.tournament, 1);
  io.fraction("crossover_rate", c.crossover_rate);
  io.fraction("mutation_rate", c.mutation_rate);
  io.fraction("mutation_doubling", c.mutation_doubling);
}

}  // namespace

void EvolutionConfig::read(ConfigReader& r) { visit_evolution_fields(*this, r); }

void EvolutionConfig::write(Json& out) const {
  ConfigWriter w(out);
  visit_evolution_fields(*this, w);
}

EvolutionConfig EvolutionConfig::from_json(const Json& config) {
  return read_config<EvolutionConfig>(config, "evolutionary strategy_config");
}

Json EvolutionConfig::to_json() const { return write_config(*this); }

}  // namespace atvoss::search
