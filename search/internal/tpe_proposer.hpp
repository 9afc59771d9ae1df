// TpeProposer: the tree-structured Parzen estimator's proposals (Bergstra et al. 2011) over
// knob-value indices, multivariate like Optuna's TPESampler(multivariate=True). It acts on a
// strategy's own record and batch, so the `tpe` strategy and the ensemble's tpe arm are one
// piece of code. Each proposal:
//   1. split the successful trials by time: the best ceil(gamma * n) (at most good_max) form
//      l(x), the rest plus every failed trial form g(x): failures are learned as "bad
//      region", so the search stops proposing into the failing part of the space;
//   2. score candidates drawn from l plus one-knob neighbours of the best trials (local
//      refinement, which finds needles TPE's wide kernels step over) by log l - log g;
//   (with probability tpe_univariate_share a proposal is univariate instead: candidates
//   recombine good trials' values knob by knob and are scored by marginal ratios);
//   3. claim the best; within a batch each point already claimed (by this arm or another)
//      joins g (a "liar"), so the batch spreads out instead of repeating one idea.
// Before tpe_startup successes the proposals are random, or, when the workload has analytic
// features (NPU operators; not recorded tables) and heuristic_before_fit is set (tpe_config.hpp), the best of
// kHeuristicPool random valid points under costmodel's heuristic model. Transfer:
// prior_trials (the same kernel on another target) are split the same way among themselves,
// join l and g with weight prior_weight, and skip the random start. Stateless beyond the
// host's records and RNG, so a host's resume stays exact. Private to search/.
#pragma once

#include <memory>
#include <vector>

#include "costmodel/cost_model.hpp"
#include "search/internal/parzen_estimator.hpp"
#include "search/internal/strategy_base.hpp"
#include "search/tpe_config.hpp"

namespace atvoss::search {

class TpeProposer {
 public:
  // host outlives the proposer (it is a member of the host strategy).
  TpeProposer(StrategyBase& host, const TpeConfig& config);
  ~TpeProposer();

  // Claims points into host's batch until it holds `target` points or nothing new is left.
  void propose(std::size_t target);

 private:
  struct Split {
    std::vector<Point> good;
    std::vector<Point> bad;
  };

  std::size_t good_count(std::size_t ok) const;
  Split split_own() const;
  Split split_prior(const std::vector<Trial>& trials) const;
  ParzenEstimator density(const std::vector<Point>& own, const std::vector<Point>& prior,
                          const std::vector<Point>& extra) const;
  std::vector<Point> candidates(const ParzenEstimator& l, const Split& own, bool univariate);
  void jump_knob(Point& p, std::size_t knob);
  bool stalled() const;
  bool claim_best(const Split& own, const std::vector<Point>& liars);
  void heuristic_points(std::size_t target);

  StrategyBase& host_;
  TpeConfig config_;
  std::vector<int> sizes_;
  Split prior_;
  std::unique_ptr<costmodel::CostModel> heuristic_;  // null: random startup
};

}  // namespace atvoss::search
