// EnsembleSearch: an OpenTuner-style bandit over two proposal arms that share one record of
// trials: the cost model (ModelGuidedSearch::model_points) and plain evolution over the
// measured trials (breed_from_measured). Each batch is split between the arms in proportion
// to the posterior mean of "this arm's proposal became a new best", Beta(wins+1, trials+2),
// with at least one slot per arm, so an arm that stops paying loses share but keeps being
// tried. Before the model has its first fit the model arm's share goes to evolution/random.
#include <array>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "search/internal/model_guided_search.hpp"
#include "search/internal/strategies.hpp"

namespace atvoss::search {
namespace {

enum Arm { kModel = 0, kEvolution = 1, kArms = 2 };

class EnsembleSearch final : public ModelGuidedSearch {
 public:
  EnsembleSearch(const ScheduleSpace& space, const StrategyOptions& o)
      : ModelGuidedSearch("ensemble", space, o) {}

 private:
  void next_points(std::size_t n) override {
    origin_.clear();
    if (const auto* model = ranking_model()) {
      model_points(*model, model_slots(n));
      tag(0, kModel);
    }
    const std::size_t from = claimed();
    breed_from_measured(n);
    tag(from, kEvolution);
    fill_random(n);
  }

  std::size_t model_slots(std::size_t n) const {
    if (n < 2) return n;
    std::array<double, kArms> share{};
    for (int a = 0; a < kArms; ++a) share[a] = (wins_[a] + 1.0) / (uses_[a] + 2.0);
    const double frac = share[kModel] / (share[kModel] + share[kEvolution]);
    const auto slots = static_cast<std::size_t>(std::lround(frac * static_cast<double>(n)));
    return std::clamp<std::size_t>(slots, 1, n - 1);
  }

  void tag(std::size_t from, Arm arm) {
    for (std::size_t i = from; i < batch().size(); ++i) origin_[batch()[i]] = arm;
  }

  void on_records(std::size_t first_new) override {
    for (std::size_t i = first_new; i < records().size(); ++i) {
      const Record& r = records()[i];
      auto it = origin_.find(r.point);
      const bool new_best = r.ok() && r.time_us < best_us_;
      if (it != origin_.end()) {
        ++uses_[it->second];
        if (new_best) ++wins_[it->second];
      }
      if (new_best) best_us_ = r.time_us;
    }
  }

  Json save_extra() const override {
    Json j = ModelGuidedSearch::save_extra();
    j["wins"] = wins_;
    j["uses"] = uses_;
    Json origin = Json::array();
    for (const auto& [p, arm] : origin_) origin.push_back({{"schedule", space().schedule_at(p).to_json()}, {"arm", arm}});
    j["origin"] = origin;
    return j;
  }

  void load_extra(const Json& extra) override {
    ModelGuidedSearch::load_extra(extra);
    const std::string ctx = "ensemble search state";
    const auto read = [&](const char* field, std::array<double, kArms>& out) {
      const Json& v = require_field(extra, field, ctx);
      if (!v.is_array() || v.size() != kArms) throw_bad_input(ctx + ": field '" + field + "' must be 2 numbers");
      for (int a = 0; a < kArms; ++a) out[a] = v[a].get<double>();
    };
    read("wins", wins_);
    read("uses", uses_);
    for (const auto& o : require_field(extra, "origin", ctx)) {
      const auto p = space().point_of(space().parse(require_field(o, "schedule", ctx)));
      if (p) origin_[*p] = static_cast<Arm>(require_int(o, "arm", ctx) == kModel ? kModel : kEvolution);
    }
  }

  std::array<double, kArms> wins_{};
  std::array<double, kArms> uses_{};
  std::map<Point, Arm> origin_;  // pending points -> the arm that proposed them
  double best_us_ = HUGE_VAL;
};

}  // namespace

std::unique_ptr<SearchStrategy> make_ensemble_search(const ScheduleSpace& space, const StrategyOptions& o) {
  return std::make_unique<EnsembleSearch>(space, o);
}

}  // namespace atvoss::search
