// The `tpe` strategy: every proposal comes from TpeProposer (search/internal/tpe_proposer.hpp),
// the tree-structured Parzen estimator over knob-value indices, for landscapes no default
// was tuned on. Stateless beyond the records and the RNG: resume is exact.
#include "search/internal/strategies.hpp"
#include "search/internal/tpe_proposer.hpp"

namespace atvoss::search {
namespace {

class TpeSearch final : public StrategyBase {
 public:
  TpeSearch(const ScheduleSpace& space, const StrategyOptions& o) : StrategyBase("tpe", space, o), tpe_(*this) {}

 private:
  void next_points(std::size_t n) override { tpe_.propose(n); }

  TpeProposer tpe_;
};

}  // namespace

std::unique_ptr<SearchStrategy> make_tpe_search(const ScheduleSpace& space, const StrategyOptions& o) {
  return std::make_unique<TpeSearch>(space, o);
}

}  // namespace atvoss::search
