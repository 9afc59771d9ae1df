#include "search/evolution_config.hpp"

#include "search/internal/config_reader.hpp"

namespace atvoss::search {

void EvolutionConfig::read(ConfigReader& r) {
  r.integer("population", population, 2);
  r.integer("tournament", tournament, 1);
  r.fraction("crossover_rate", crossover_rate);
  r.fraction("mutation_rate", mutation_rate);
  r.fraction("mutation_doubling", mutation_doubling);
}

void EvolutionConfig::write(Json& out) const {
  out["population"] = population;
  out["tournament"] = tournament;
  out["crossover_rate"] = crossover_rate;
  out["mutation_rate"] = mutation_rate;
  out["mutation_doubling"] = mutation_doubling;
}

EvolutionConfig EvolutionConfig::from_json(const Json& config) {
  return read_config<EvolutionConfig>(config, "evolutionary strategy_config");
}

Json EvolutionConfig::to_json() const { return write_config(*this); }

}  // namespace atvoss::search
