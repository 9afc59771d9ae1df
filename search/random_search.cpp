// RandomSearch: uniform sampling without replacement over the valid, unmeasured points.
// The baseline every other strategy must beat.
#include "search/internal/strategies.hpp"
#include "search/internal/strategy_base.hpp"

namespace atvoss::search {
namespace {

class RandomSearch final : public StrategyBase {
 public:
  RandomSearch(const ScheduleSpace& space, const TuneContext& c) : StrategyBase("random", space, c) {}

 private:
  void next_points(std::size_t n) override { fill_random(n); }
};

}  // namespace

StrategyEntry random_strategy() {
  StrategyEntry e;
  e.name = "random";
  e.make = [](const ScheduleSpace& space, const TuneContext& c, const Json&) {
    return std::make_unique<RandomSearch>(space, c);
  };
  return e;
}

}  // namespace atvoss::search
