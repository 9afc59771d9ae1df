// The `tpe` strategy: every proposal comes from TpeProposer (search/internal/tpe_proposer.hpp),
// the tree-structured Parzen estimator over knob-value indices, for landscapes no default
// was tuned on. Stateless beyond the records and the RNG: resume is exact.
#include "search/internal/strategies.hpp"
#include "search/internal/tpe_proposer.hpp"
#include "search/tpe_config.hpp"

namespace atvoss::search {
namespace {

// TPE breeds nothing; its neighbour moves are mutate_knob's, with the config's doubling.
EvolutionConfig neighbour_steps(const TpeConfig& config) {
  EvolutionConfig e;
  e.mutation_doubling = config.mutation_doubling;
  return e;
}

class TpeSearch final : public StrategyBase {
 public:
  TpeSearch(const ScheduleSpace& space, const TuneContext& c, const TpeConfig& config)
      : StrategyBase("tpe", space, c, neighbour_steps(config)), tpe_(*this, config) {}

 private:
  void next_points(std::size_t n) override { tpe_.propose(n); }

  TpeProposer tpe_;
};

}  // namespace

StrategyEntry tpe_strategy() {
  StrategyEntry e;
  e.name = "tpe";
  e.make = [](const ScheduleSpace& space, const TuneContext& c, const Json& config) {
    return std::make_unique<TpeSearch>(space, c, TpeConfig::from_json(config));
  };
  takes_config<TpeConfig>(e);
  e.uses_prior = [](const Workload&) { return true; };
  return e;
}

}  // namespace atvoss::search
