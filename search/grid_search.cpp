// GridSearch: walks the space in flat-index order (first knob most significant), as
// AutoTVM's GridSearchTuner does, skipping invalid and already-measured points. The seed
// is not used: every grid run is the same walk.
#include "core/error.hpp"
#include "search/internal/strategies.hpp"
#include "search/internal/strategy_base.hpp"

namespace atvoss::search {
namespace {

class GridSearch final : public StrategyBase {
 public:
  GridSearch(const ScheduleSpace& space, const TuneContext& c) : StrategyBase("grid", space, c) {}

 private:
  void next_points(std::size_t n) override {
    while (claimed() < n && cursor_ < space().size()) claim(space().point_at(cursor_++));
  }
  Json save_extra() const override { return {{"cursor", cursor_}}; }
  void load_extra(const Json& extra) override {
    cursor_ = static_cast<std::uint64_t>(require_int(extra, "cursor", "grid search state"));
  }

  std::uint64_t cursor_ = 0;  // next flat index to consider
};

}  // namespace

StrategyEntry grid_strategy() {
  StrategyEntry e;
  e.name = "grid";
  e.make = [](const ScheduleSpace& space, const TuneContext& c, const Json&) {
    return std::make_unique<GridSearch>(space, c);
  };
  return e;
}

}  // namespace atvoss::search
