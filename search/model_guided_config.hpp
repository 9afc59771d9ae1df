// ModelGuidedConfig: the JSON config of the "model-guided" strategy (evolution over the cost
// model's predictions, MetaSchedule-style; search/internal/model_guided_search.hpp): the
// evolution keys of evolution_config.hpp, which its genetic steps use, and the keys below.
// A key the strategy does not take is refused.
// Prior trials (TuneContext::prior_trials): on a measured table, whose features are the knob
// values, the model trains on them with its own trials and fits before its first trial; from 8
// own successes on, the prior's weight is rho^3, rho being how well a model of the prior alone
// ranks the own trials. On an operator they are ignored (transfer groups serve there).
// Prior spaces (TuneContext::prior_spaces, other tables carried over by knob name) join the
// fits once 8 own trials succeeded, each weighed the same way, together capped by prior_space_cap.
#pragma once

#include "core/json.hpp"
#include "search/evolution_config.hpp"

namespace atvoss::search {

struct ModelGuidedConfig {
  EvolutionConfig evolution;
  // Candidates evolved per round over model predictions (MetaSchedule: 512), >= 2, and
  // generations, >= 0.
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
  // Batch members differ from each other in at least this many knobs (>= 1) while enough
  // candidates allow it (1 disables the filter).
  int diversity_knobs = 2;
  // Before the first fit, rank candidates with costmodel's analytic "heuristic" model
  // instead of proposing at random. Ignored for recorded workloads (no analytic features).
  bool heuristic_before_fit = true;
  // Successful trials needed before the first fit (>= 1); below it the heuristic ranks (or random).
  int min_train_samples = 8;
  // Refit when the trials added since the last fit are at least this fraction (>= 0) of it.
  double retrain_fraction = 0.2;
  // Once the own trials judge the prior spaces (TuneContext::prior_spaces), their groups
  // together weigh at most this multiple (>= 0) of the own trials in a fit, so another
  // table's landscape guides the search and then yields to this one's; 0 leaves them out.
  double prior_space_cap = 1.0;
  // Rows carried over from the prior spaces in all (>= 1), shared by the related tables (at
  // most 4, those sharing the most knobs): every fit trains on them, so they cost fit time.
  int prior_space_rows = 1024;

  // bad_input naming the field (context "model-guided strategy_config").
  static ModelGuidedConfig from_json(const Json& config);
  Json to_json() const;
  void read(ConfigReader& r);
  void write(Json& out) const;
};

}  // namespace atvoss::search
