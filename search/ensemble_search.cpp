// EnsembleSearch: an OpenTuner-style bandit over proposal arms that share one record of
// trials. Arms (EnsembleConfig::ensemble_arms, ensemble_config.hpp): "model" (the cost model's picks,
// ModelGuidedSearch::model_points), "tpe" (TpeProposer, the Parzen-estimator proposals) and
// "evolution" (breed_from_measured). Each arm's share of a batch is the posterior mean of
// "this arm's proposal became a new best", Beta(wins+1, trials+2): an arm that stops paying
// loses share but keeps being tried. A batch of at least as many slots as arms gives each
// arm one slot and splits the rest by share; a smaller batch (sequential tuning, batch 1)
// draws each slot's arm with probability proportional to its share, from the seeded RNG.
// The model arm sits out until the model can rank (its first fit, or the heuristic on
// analytic workloads). The arms mix the cost model's generalisation with TPE's local
// refinement, so neither one's blind spot decides a space (docs/decisions/search-defaults.md).
#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "search/ensemble_config.hpp"
#include "search/internal/model_guided_search.hpp"
#include "search/internal/strategies.hpp"
#include "search/internal/tpe_proposer.hpp"

namespace atvoss::search {
namespace {

enum Arm { kModel = 0, kTpe = 1, kEvolution = 2, kArms = 3 };
static_assert(kEnsembleArms.size() == kArms && kEnsembleArms[kModel] == "model" && kEnsembleArms[kTpe] == "tpe" &&
              kEnsembleArms[kEvolution] == "evolution");

// REQUIRES: name is one of kEnsembleArms (EnsembleConfig::from_json checked it).
Arm arm_named(const std::string& name) {
  return static_cast<Arm>(std::find(kEnsembleArms.begin(), kEnsembleArms.end(), name) - kEnsembleArms.begin());
}

class EnsembleSearch final : public ModelGuidedSearch {
 public:
  EnsembleSearch(const ScheduleSpace& space, const TuneContext& c, const EnsembleConfig& config)
      : ModelGuidedSearch("ensemble", space, c, config.model), tpe_(*this, config.tpe) {
    for (const auto& name : config.ensemble_arms) arms_.push_back(arm_named(name));
  }

 private:
  void next_points(std::size_t n) override {
    origin_.clear();
    const costmodel::CostModel* model = nullptr;
    std::vector<Arm> ready;
    for (Arm a : arms_) {
      if (a == kModel && !(model = ranking_model())) continue;
      ready.push_back(a);
    }
    const auto slots = allocate(ready, n);
    for (std::size_t i = 0; i < ready.size(); ++i) {
      const std::size_t from = claimed();
      run_arm(ready[i], model, from + slots[i]);
      tag(from, ready[i]);
    }
    fill_random(n);  // an arm whose candidates ran out
  }

  void run_arm(Arm arm, const costmodel::CostModel* model, std::size_t target) {
    if (target <= claimed()) return;
    if (arm == kModel)
      model_points(*model, target);
    else if (arm == kTpe)
      tpe_.propose(target);
    else
      breed_from_measured(target);
  }

  double share(Arm a) const { return (wins_[a] + 1.0) / (uses_[a] + 2.0); }

  // Slots per ready arm, in the order of `ready`.
  std::vector<std::size_t> allocate(const std::vector<Arm>& ready, std::size_t n) {
    std::vector<std::size_t> slots(ready.size(), 0);
    if (ready.empty()) return slots;
    double total = 0;
    for (Arm a : ready) total += share(a);
    if (n < ready.size()) {
      for (std::size_t s = 0; s < n; ++s) {
        double u = uniform01() * total;
        std::size_t i = 0;
        while (i + 1 < ready.size() && (u -= share(ready[i])) >= 0) ++i;
        ++slots[i];
      }
      return slots;
    }
    // One slot each, the rest in proportion (largest remainder, ties to the earlier arm).
    const double rest = static_cast<double>(n - ready.size());
    std::size_t given = ready.size();
    std::vector<double> frac(ready.size());
    for (std::size_t i = 0; i < ready.size(); ++i) {
      const double want = rest * share(ready[i]) / total;
      slots[i] = 1 + static_cast<std::size_t>(want);
      frac[i] = want - std::floor(want);
      given += slots[i] - 1;
    }
    while (given < n) {
      std::size_t best = 0;
      for (std::size_t i = 1; i < ready.size(); ++i) {
        if (frac[i] > frac[best]) best = i;
      }
      ++slots[best], frac[best] = -1, ++given;
    }
    return slots;
  }

  void tag(std::size_t from, Arm arm) {
    for (std::size_t i = from; i < batch().size(); ++i) origin_[batch()[i]] = arm;
  }

  void on_records(std::size_t first_new) override {
    for (std::size_t i = first_new; i < records().size(); ++i) {
      const PointTrial& r = records()[i];
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
    for (const auto& [p, arm] : origin_)
      origin.push_back({{"schedule", space().schedule_at(p).to_json()}, {"arm", arm}});
    j["origin"] = origin;
    return j;
  }

  void load_extra(const Json& extra) override {
    ModelGuidedSearch::load_extra(extra);
    const std::string ctx = "ensemble search state";
    const auto read = [&](const char* field, std::array<double, kArms>& out) {
      const Json& v = require_field(extra, field, ctx);
      if (!v.is_array() || v.size() != kArms) {
        throw_bad_input(ctx + ": field '" + field + "' must be " + std::to_string(kArms) + " numbers");
      }
      for (int a = 0; a < kArms; ++a) out[a] = v[a].get<double>();
    };
    read("wins", wins_);
    read("uses", uses_);
    for (const auto& o : require_field(extra, "origin", ctx)) {
      const auto p = space().point_of(space().parse(require_field(o, "schedule", ctx)));
      const auto arm = require_int(o, "arm", ctx);
      if (arm < 0 || arm >= kArms) throw_bad_input(ctx + ": field 'arm' must be 0.." + std::to_string(kArms - 1));
      if (p) origin_[*p] = static_cast<Arm>(arm);
    }
  }

  TpeProposer tpe_;
  std::vector<Arm> arms_;
  std::array<double, kArms> wins_{};
  std::array<double, kArms> uses_{};
  std::map<Point, Arm> origin_;  // pending points -> the arm that proposed them
  double best_us_ = HUGE_VAL;
};

}  // namespace

StrategyEntry ensemble_strategy() {
  StrategyEntry e;
  e.name = "ensemble";
  e.make = [](const ScheduleSpace& space, const TuneContext& c, const Json& config) {
    return std::make_unique<EnsembleSearch>(space, c, EnsembleConfig::from_json(config));
  };
  takes_config<EnsembleConfig>(e);
  e.uses_cost_model = true;
  e.uses_prior = [](const Workload&) { return true; };
  return e;
}

}  // namespace atvoss::search
