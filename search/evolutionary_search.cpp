// EvolutionarySearch: a steady-state genetic algorithm over measured trials. Parents are
// the best `population` successful trials (elitism: the best are never lost), chosen by
// tournament; children take each knob from either parent and move knobs to neighbouring
// values. Invalid or already-measured children are mutated again (repair) and dropped after
// a few tries; the batch is topped up with random points while too few trials succeeded.
#include "search/evolution_config.hpp"
#include "search/internal/strategies.hpp"
#include "search/internal/strategy_base.hpp"

namespace atvoss::search {
namespace {

class EvolutionarySearch final : public StrategyBase {
 public:
  EvolutionarySearch(const ScheduleSpace& space, const TuneContext& c, const EvolutionConfig& e)
      : StrategyBase("evolutionary", space, c, e) {}

 private:
  void next_points(std::size_t n) override {
    breed_from_measured(n);
    fill_random(n);  // first rounds, or when breeding runs dry
  }
};

}  // namespace

StrategyEntry evolutionary_strategy() {
  StrategyEntry e;
  e.name = "evolutionary";
  e.make = [](const ScheduleSpace& space, const TuneContext& c, const Json& config) {
    return std::make_unique<EvolutionarySearch>(space, c, EvolutionConfig::from_json(config));
  };
  takes_config<EvolutionConfig>(e);
  return e;
}

}  // namespace atvoss::search
