// TpeConfig: the JSON config of the "tpe" strategy (the tree-structured Parzen estimator over
// knob-value indices, search/internal/tpe_proposer.hpp), which the ensemble's tpe arm shares.
// Defaults: the grid point bench_lofo picks on all five recorded kernel families (and on four
// of five when one is held out); see search/README.md. A key the strategy does not take is
// refused.
// Prior trials (TuneContext::prior_trials): treated as down-weighted observations of a similar
// landscape: ranked among themselves, never counted as this space's measurements, proposable
// here, and they skip the random start.
#pragma once

#include "core/json.hpp"

namespace atvoss::search {

class ConfigReader;

struct TpeConfig {
  // Random proposals before the densities take over (>= 1; skipped when there are prior trials).
  int tpe_startup = 10;
  // The best ceil(gamma * successes) trials (gamma in (0, 1]), at most tpe_good_max, form the
  // "good" density l; the rest and every failed trial form g. Proposals maximise l/g.
  double tpe_gamma = 0.2;
  int tpe_good_max = 25;
  // Kernel width as a fraction of each knob's index range (> 0; Scott's rule shrinks it with N).
  double tpe_bandwidth = 0.1;
  // Knobs with at most this many values get a categorical kernel instead of a Gaussian over
  // value indices (0: none). Short lists are often not smooth (see parzen_estimator.hpp).
  int tpe_categorical_max = 0;
  // Weight of the uniform component in l and g, in observations (> 0).
  double tpe_prior_weight = 1.0;
  // Candidates scored per proposal: drawn from l, plus this share of one-knob neighbours of
  // the best trials (local refinement around the incumbents).
  int tpe_candidates = 48;
  double tpe_local_share = 0.25;
  // Share of proposals made by univariate TPE (knobs independent: candidates recombine the
  // good trials' values, scored by the product of marginal ratios), the rest multivariate.
  // Multivariate refines one basin; univariate jumps between basins.
  double tpe_univariate_share = 0.0;
  // Neighbours are taken around this many of the best trials.
  int tpe_local_top = 4;
  // Share of those neighbours whose knob jumps to any other value of its list instead of
  // one or two steps (a coordinate sweep of the incumbent): categorical knobs such as
  // pnpoly's between_method have no order, so their best value may be far in index.
  // 0.5: bench_lofo's pick on all five families and on four of five folds.
  double tpe_local_wide = 0.5;
  // Probability that a neighbour also moves a second knob (one or two steps): optima that
  // need two knobs changed together (pnpoly: between_method and tile_size) are not
  // reachable through one-knob moves whose intermediate point is worse.
  double tpe_local_pair = 0.0;
  // After this many evaluations without a new best (0: never), candidates are drawn
  // uniformly from the space instead of from l: the incumbent's basin looks exhausted, so
  // l/g ranks fresh regions (a restart that keeps what was learnt).
  int tpe_stall = 0;
  // Probability that a proposal is a random unmeasured schedule instead of l/g's best.
  double epsilon = 0.05;
  // Before tpe_startup successes, take the best of a random pool under costmodel's analytic
  // heuristic instead of random points (operators only; recorded tables have no analytic features).
  bool heuristic_before_fit = true;
  // Weight (>= 0) of one prior trial relative to one own trial in the densities.
  double prior_weight = 0.5;
  // The neighbour steps' chance of doubling or halving a value (evolution_config.hpp).
  double mutation_doubling = 0;

  // bad_input naming the field (context "tpe strategy_config").
  static TpeConfig from_json(const Json& config);
  Json to_json() const;
  void read(ConfigReader& r);
  void write(Json& out) const;
};

}  // namespace atvoss::search
