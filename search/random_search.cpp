// RandomSearch: uniform sampling without replacement over the valid, unmeasured points.
// The baseline every other strategy must beat.
#include "search/internal/strategies.hpp"
#include "search/internal/strategy_base.hpp"

namespace atvoss::search {
namespace {

class RandomSearch final : public StrategyBase {
 public:
  RandomSearch(const ScheduleSpace& space, const StrategyOptions& o) : StrategyBase("random", space, o) {}

 private:
  void next_points(std::size_t n) override { fill_random(n); }
};

}  // namespace

std::unique_ptr<SearchStrategy> make_random_search(const ScheduleSpace& space, const StrategyOptions& o) {
  return std::make_unique<RandomSearch>(space, o);
}

}  // namespace atvoss::search
