// SearchStrategy: decides which schedules of one (workload, target) space to measure
// next. The tuner asks for a batch, measures it, and hands the results back; the
// strategy never proposes a schedule it has been told about (measured now, in an
// earlier round, or in an earlier job resumed from the database), never the same
// schedule twice, and only schedules that pass ScheduleSpace::check.
//
// Call order (enforced; a wrong call throws Error(internal) naming the missing call):
//   s = make_strategy(name, space, options)
//   s->observe(history)          optional, any time no batch is pending: schedules measured
//                                elsewhere (database on resume, other workers)
//   loop:
//     batch = s->propose(n)      REQUIRES: no batch pending (update() the previous one first)
//     s->update(results)         REQUIRES: a batch pending; results are for schedules of that
//                                batch (any order, any subset; a schedule left out, or whose
//                                status is an infrastructure error, may be proposed again)
//   state = s->save_state()      any time; load_state(state) on a fresh strategy of the same
//                                name and space resumes exactly (same later proposals)
//
// Strategies (make_strategy names): "random", "grid", "evolutionary", "model-guided"
// (evolution over CostModel predictions, MetaSchedule-style), "ensemble" (bandit over the
// cost model's, TPE's and evolution's proposals, crediting new bests), "tpe" (tree-structured Parzen
// estimator over knob-value indices, with local candidates and an optional transfer prior).
// Threading: not thread-safe; one tuner thread owns a strategy.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/measurement.hpp"
#include "core/schedule.hpp"
#include "core/schedule_space.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"
#include "costmodel/cost_model.hpp"

namespace atvoss::search {

// One measured schedule as the strategy sees it: the cost model's Sample (schedule,
// status, time_us meaningful only when ok; lower is better), so trials train the model
// without a copy.
using Trial = costmodel::Sample;

struct StrategyOptions {
  // Seeds every random choice; the same seed, space and results give the same proposals.
  std::uint64_t seed = 0;

  // ---- evolutionary (and the genetic steps of model-guided) ----
  // Parents kept from the best measured schedules (elitism). Larger explores more slowly.
  int population = 32;
  // Candidates per tournament; larger selects more greedily.
  int tournament = 3;
  // Probability that a child's knob comes from the second parent (uniform crossover).
  double crossover_rate = 0.5;
  // Per-knob probability of moving to a neighbouring value (at least one knob always moves).
  double mutation_rate = 0.25;
  // Probability that a knob's mutation moves to the value twice or half its own when the
  // list holds one (otherwise it takes the neighbour step). Tile and block sizes are often
  // good at powers of two only, and on an arithmetic list (16, 32, 48, .., 256) a doubling
  // is many neighbour steps away, through values that may all be slow. 0: bench_lofo chose 0
  // in every fold (docs/decisions/search-defaults.md).
  double mutation_doubling = 0;

  // ---- model-guided ----
  // Workload and target the cost model featurises; REQUIRED for model-guided and ensemble.
  Workload workload;
  Target target;
  // "xgboost" or "linear"; used when model_factory is empty.
  std::string cost_model = "xgboost";
  // Threads the default model trains and predicts with; 0 keeps costmodel's default (2).
  // 1 avoids OpenMP spin-waiting when the machine is shared with other work.
  int model_threads = 0;
  // Builds the model (tests inject fakes; a tuner can hand in a transfer-initialised model).
  // Default: costmodel::make_cost_model(cost_model, seed).
  std::function<std::unique_ptr<costmodel::CostModel>()> model_factory;
  // Extra training data from other workloads of the same target (transfer), used together
  // with this workload's own trials. Empty by default.
  std::vector<costmodel::WorkloadGroup> transfer_groups;
  // Candidates evolved per round over model predictions (MetaSchedule: 512) and generations.
  int model_population = 512;
  int model_generations = 4;
  // Fraction of the initial population seeded from the best measured schedules.
  double seed_from_measured = 0.2;
  // Probability that a batch slot is a random unmeasured schedule instead of the model's pick.
  double epsilon = 0.05;
  // Probability that a slot takes the model's best candidate that differs from the best
  // measured trial in at least a third of the knobs, so a second basin stays in play.
  double model_far_share = 0;
  // After this many trials without a new best, the first model slot of each batch (every
  // slot at batch 1) takes that distant pick until the best improves (a restart away from a
  // stalled basin); 0 never. 30: bench_lofo's pick (docs/decisions/search-defaults.md).
  int model_stall = 30;
  // Batch members differ from each other in at least this many knobs while enough
  // candidates allow it (1 disables the filter).
  int diversity_knobs = 2;
  // Before the first fit, rank candidates with costmodel's analytic "heuristic" model
  // instead of proposing at random. Ignored for recorded workloads (no analytic features).
  bool heuristic_before_fit = true;
  // Successful trials needed before the first fit; below it the heuristic ranks (or random).
  int min_train_samples = 8;
  // Refit when the trials added since the last fit are at least this fraction of it.
  double retrain_fraction = 0.2;

  // ---- tpe (tree-structured Parzen estimator over knob-value indices) ----
  // Defaults: the grid point bench_lofo picks on all five recorded kernel families (and on
  // four of five when one is held out); see search/README.md.
  // Random proposals before the densities take over (skipped when prior_trials has results).
  int tpe_startup = 10;
  // The best ceil(gamma * successes) trials, at most tpe_good_max, form the "good" density l;
  // the rest and every failed trial form g. Proposals maximise l/g.
  double tpe_gamma = 0.2;
  int tpe_good_max = 25;
  // Kernel width as a fraction of each knob's index range (Scott's rule shrinks it with N).
  double tpe_bandwidth = 0.1;
  // Knobs with at most this many values get a categorical kernel instead of a Gaussian over
  // value indices (0: none). Short lists are often not smooth (see parzen_estimator.hpp).
  int tpe_categorical_max = 0;
  // Weight of the uniform component in l and g, in observations.
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

  // ---- ensemble ----
  // The bandit's arms, each at most once: "model" (the cost model's picks), "tpe" (the
  // Parzen-estimator proposals above) and "evolution" (breeding the measured trials).
  // Default: model and tpe (tpe's local refinement in place of plain breeding). The tuner's
  // default strategy is still model-guided: leave-one-family-out chose the model arm alone
  // over this pair (docs/decisions/search-defaults.md).
  std::vector<std::string> ensemble_arms = {"model", "tpe"};

  // ---- transfer (warm start) ----
  // Results of the same kernel on another target (e.g. from the database); schedules not in
  // this space are ignored. tpe (and the ensemble's tpe arm) treats them as down-weighted
  // observations of a similar landscape: ranked among themselves, never counted as this
  // space's measurements, and proposable here. model-guided trains its model on them with
  // its own trials on a measured table (whose features are the knob values), and fits
  // before its first trial; from 8 own successes on, the prior's weight is rho^3, rho being
  // how well a model of the prior alone ranks the own trials. On an operator it ignores them
  // (transfer_groups serve there).
  std::vector<Trial> prior_trials;
  // Weight of one prior trial relative to one own trial in the densities.
  double prior_weight = 0.5;
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;

  virtual std::string name() const = 0;
  // Records schedules measured elsewhere; they are never proposed and they inform the
  // search like results of update(). Schedules outside the space and infrastructure
  // errors are ignored. REQUIRES: no batch pending.
  virtual void observe(std::span<const Trial> history) = 0;
  // Up to n new, valid, distinct schedules; fewer (possibly none) when the space has
  // fewer left. Afterwards a batch is pending. REQUIRES: no batch pending.
  virtual std::vector<Schedule> propose(std::size_t n) = 0;
  // Results of the pending batch; afterwards no batch is pending. bad_input if a result's
  // schedule was not in the batch. REQUIRES: a batch pending.
  virtual void update(std::span<const Trial> results) = 0;
  // Everything needed to resume exactly: RNG, round, trials, pending batch, own state.
  virtual Json save_state() const = 0;
  // REQUIRES: a fresh strategy (nothing observed or proposed) of the same name and space.
  // bad_input naming the field if state is malformed or from another strategy.
  virtual void load_state(const Json& state) = 0;
  // Trials recorded so far (observed or updated, including candidate errors).
  virtual std::size_t trials() const = 0;
};

// Names of the built-in strategies, in a stable order.
const std::vector<std::string>& built_in_strategy_names();
// Names accepted by make_strategy: the built-ins, then those registered at run time
// (search/strategy_registry.hpp).
std::vector<std::string> strategy_names();
// bad_input listing the names if name is unknown; bad_input if options are out of range.
std::unique_ptr<SearchStrategy> make_strategy(const std::string& name, const ScheduleSpace& space,
                                              const StrategyOptions& options = {});

}  // namespace atvoss::search
