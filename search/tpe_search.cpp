// TpeSearch: tree-structured Parzen estimator (Bergstra et al. 2011) over knob-value
// indices, multivariate like Optuna's TPESampler(multivariate=True), for landscapes no
// default was tuned on (issue 12). Each proposal:
//   1. split the successful trials by time: the best ceil(gamma * n) (at most good_max) form
//      l(x), the rest plus every failed trial form g(x): failures are learned as "bad
//      region", so the search stops proposing into the failing part of the space;
//   2. score candidates drawn from l plus one-knob neighbours of the best trials (local
//      refinement, which finds needles TPE's wide kernels step over) by log l - log g;
//   (with probability tpe_univariate_share a proposal is univariate instead: candidates
//   recombine good trials' values knob by knob and are scored by marginal ratios);
//   3. claim the best; within a batch each claimed point joins g (a "liar"), so the batch
//      spreads out instead of repeating one idea.
// Before tpe_startup successes the proposals are random, or, when the workload has analytic
// features (NPU operators; not recorded tables) and heuristic_before_fit is set, the best of
// kHeuristicPool random valid points under costmodel's heuristic model, as model-guided does:
// the NPU suite then starts at the heuristic's optimum instead of 40 trials of exploring. Transfer: prior_trials (the same
// kernel on another target) are split the same way among themselves and join l and g with
// weight prior_weight, and skip the random start, so the first proposals are the other
// target's best regions. Stateless beyond the records and the RNG: resume is exact.
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "costmodel/cost_model.hpp"

#include "search/internal/parzen_estimator.hpp"
#include "search/internal/strategies.hpp"
#include "search/internal/strategy_base.hpp"

namespace atvoss::search {
namespace {

// A prior larger than this is thinned (every k-th point) for g: the good part is what
// steers the search, and g's cost grows with its size.
constexpr std::size_t kPriorBadMax = 256;
// Random valid points the heuristic ranks per startup batch.
constexpr std::size_t kHeuristicPool = 4096;

struct Split {
  std::vector<Point> good;
  std::vector<Point> bad;
};

class TpeSearch final : public StrategyBase {
 public:
  TpeSearch(const ScheduleSpace& space, const StrategyOptions& o) : StrategyBase("tpe", space, o) {
    for (const auto& k : space.knobs()) sizes_.push_back(static_cast<int>(k.values.size()));
    prior_ = split_prior(o.prior_trials);
    if (o.heuristic_before_fit && costmodel::has_plan_features(o.workload)) {
      heuristic_ = costmodel::make_cost_model("heuristic", o.seed);
    }
  }

 private:
  void next_points(std::size_t n) override {
    const Split own = split_own();
    const bool ready = (successes() >= static_cast<std::size_t>(options().tpe_startup) && !own.good.empty()) ||
                       !prior_.good.empty();
    if (!ready) {
      if (heuristic_) heuristic_points(n);
      fill_random(n);
      return;
    }
    std::vector<Point> liars;
    while (claimed() < n) {
      const std::size_t before = claimed();
      if (uniform01() >= options().epsilon) claim_best(own, liars);
      if (claimed() == before) fill_random(before + 1);
      if (claimed() == before) return;  // nothing new and valid is left
      liars.push_back(batch().back());
    }
  }

  std::size_t successes() const {
    return static_cast<std::size_t>(
        std::count_if(records().begin(), records().end(), [](const Record& r) { return r.ok(); }));
  }

  std::size_t good_count(std::size_t ok) const {
    const auto by_gamma = static_cast<std::size_t>(std::ceil(options().tpe_gamma * static_cast<double>(ok)));
    return std::clamp<std::size_t>(by_gamma, 1, static_cast<std::size_t>(options().tpe_good_max));
  }

  // Own trials: best good_count() successes are good; other successes and failures are bad.
  Split split_own() const {
    const auto best = best_records(records().size());
    Split s;
    const std::size_t ng = best.empty() ? 0 : good_count(best.size());
    for (std::size_t i = 0; i < best.size(); ++i) (i < ng ? s.good : s.bad).push_back(best[i]->point);
    for (const auto& r : records()) {
      if (!r.ok()) s.bad.push_back(r.point);
    }
    return s;
  }

  Split split_prior(const std::vector<Trial>& trials) const {
    std::vector<std::pair<double, Point>> ok;
    Split s;
    for (const auto& t : trials) {
      auto p = space().point_of(t.schedule);
      if (!p) continue;
      if (t.status == Status::ok) ok.emplace_back(t.time_us, std::move(*p));
      else if (!is_infrastructure_error(t.status)) s.bad.push_back(std::move(*p));
    }
    std::stable_sort(ok.begin(), ok.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const std::size_t ng = ok.empty() ? 0 : good_count(ok.size());
    for (std::size_t i = 0; i < ok.size(); ++i) (i < ng ? s.good : s.bad).push_back(ok[i].second);
    if (s.bad.size() > kPriorBadMax) {
      std::vector<Point> thin;
      const std::size_t step = (s.bad.size() + kPriorBadMax - 1) / kPriorBadMax;
      for (std::size_t i = 0; i < s.bad.size(); i += step) thin.push_back(s.bad[i]);
      s.bad = std::move(thin);
    }
    return s;
  }

  ParzenEstimator density(const std::vector<Point>& own, const std::vector<Point>& prior,
                          const std::vector<Point>& extra) const {
    ParzenEstimator e(sizes_, options().tpe_bandwidth, options().tpe_prior_weight, options().tpe_categorical_max);
    for (const auto& p : own) e.add(p, 1.0);
    for (const auto& p : extra) e.add(p, 1.0);
    if (options().prior_weight > 0) {
      for (const auto& p : prior) e.add(p, options().prior_weight);
    }
    e.build();
    return e;
  }

  // Candidates: draws from l (a few repair mutations if invalid) and, multivariate, one-knob
  // neighbours of the best trials; only new valid points.
  std::vector<Point> candidates(const ParzenEstimator& l, const Split& own, bool univariate) {
    const bool restart = stalled();
    const auto total = static_cast<std::size_t>(options().tpe_candidates);
    const auto local =
        restart || univariate ? 0 : static_cast<std::size_t>(std::lround(options().tpe_local_share * static_cast<double>(total)));
    std::vector<Point> out;
    PointSet in;
    const auto add = [&](Point p) {
      for (int repair = 0; repair < 3 && !is_new_valid(p); ++repair) mutate_knob(p, rng()() % p.size());
      if (is_new_valid(p) && in.insert(p).second) out.push_back(std::move(p));
    };
    // Around the incumbents (the good list is best first); the prior's best before any own.
    const auto& centres = own.good.empty() ? prior_.good : own.good;
    const std::size_t tops = std::min<std::size_t>(centres.size(), static_cast<std::size_t>(options().tpe_local_top));
    for (std::size_t tries = 0; out.size() < local && tries < 8 * total && tops > 0; ++tries) {
      Point p = centres[rng()() % tops];
      const std::size_t knob = rng()() % p.size();
      if (uniform01() < options().tpe_local_wide) jump_knob(p, knob);
      else mutate_knob(p, knob);
      if (p.size() > 1 && uniform01() < options().tpe_local_pair) {
        mutate_knob(p, (knob + 1 + rng()() % (p.size() - 1)) % p.size());
      }
      add(std::move(p));
    }
    for (std::size_t tries = 0; out.size() < total && tries < 8 * total; ++tries) {
      add(restart ? space().random_point(rng()) : univariate ? l.sample_marginal(rng()) : l.sample(rng()));
    }
    return out;
  }

  // Moves one knob of p to a uniformly drawn other value of its list.
  void jump_knob(Point& p, std::size_t knob) {
    const int n = sizes_[knob];
    if (n <= 1) return;
    const int v = static_cast<int>(rng()() % static_cast<std::uint64_t>(n - 1));
    p[knob] = v >= p[knob] ? v + 1 : v;
  }

  // True if the last tpe_stall evaluations brought no new best.
  bool stalled() const {
    if (options().tpe_stall == 0) return false;
    double best = HUGE_VAL;
    std::size_t last_gain = 0;
    for (std::size_t i = 0; i < records().size(); ++i) {
      const Record& r = records()[i];
      if (r.ok() && r.time_us < best) best = r.time_us, last_gain = i;
    }
    return records().size() - last_gain > static_cast<std::size_t>(options().tpe_stall);
  }

  bool claim_best(const Split& own, const std::vector<Point>& liars) {
    const ParzenEstimator l = density(own.good, prior_.good, {});
    const ParzenEstimator g = density(own.bad, prior_.bad, liars);
    const bool univariate = options().tpe_univariate_share > 0 && uniform01() < options().tpe_univariate_share;
    const auto cands = candidates(l, own, univariate);
    if (cands.empty()) return false;
    std::size_t best = 0;
    double best_score = -HUGE_VAL;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      const double score = univariate ? l.log_marginal_density(cands[i]) - g.log_marginal_density(cands[i])
                                      : l.log_density(cands[i]) - g.log_density(cands[i]);
      if (score > best_score) best_score = score, best = i;
    }
    return claim(cands[best]);
  }

  // Claims the n best of a pool of random new valid points under the heuristic model.
  void heuristic_points(std::size_t n) {
    std::vector<Point> pool;
    PointSet in;
    for (std::size_t tries = 0; pool.size() < kHeuristicPool && tries < 8 * kHeuristicPool; ++tries) {
      Point p = space().random_point(rng());
      if (is_new_valid(p) && in.insert(p).second) pool.push_back(std::move(p));
    }
    std::vector<Schedule> schedules;
    for (const auto& p : pool) schedules.push_back(space().schedule_at(p));
    const auto scores = heuristic_->predict(options().workload, options().target, schedules);
    if (scores.size() != pool.size()) return;  // a model that cannot rank: random startup
    std::vector<std::size_t> order(pool.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
    for (std::size_t i = 0; i < order.size() && claimed() < n; ++i) claim(pool[order[i]]);
  }

  std::vector<int> sizes_;
  Split prior_;
  std::unique_ptr<costmodel::CostModel> heuristic_;  // null: random startup
};

}  // namespace

std::unique_ptr<SearchStrategy> make_tpe_search(const ScheduleSpace& space, const StrategyOptions& o) {
  return std::make_unique<TpeSearch>(space, o);
}

}  // namespace atvoss::search
