// ModelGuidedSearch: MetaSchedule-style evolutionary search over cost-model predictions.
// Each round: refit the CostModel when enough new trials arrived (retrain policy below),
// evolve a population of config().model_population points for model_generations
// generations (seeded from the best measured trials plus random valid points; parents by
// predicted-score tournament; per-knob crossover and neighbour mutation), collect every
// unmeasured valid point the evolution visited with its score, and fill the batch best
// score first under a diversity filter, each slot replaced by a random point with
// probability epsilon. While the best trial is older than model_stall trials, the first
// model slot of a batch takes the best candidate differing from it in a third of the knobs
// (a restart; model_far_share does the same for a share of slots). Scores are kept per
// point until the next fit when the model scores rows alone (CostModel::scores_rows_alone).
// Below min_train_samples successful trials the analytic heuristic model ranks instead (or,
// on recorded spaces, proposals are random).
// Retrain policy: costmodel::RetrainPolicy over the trials handed to the model (candidate
// errors included, since the model learns from them too): the first fit once
// min_train_samples of them succeeded, then whenever the trials added since the last fit are
// >= retrain_fraction of that fit's size.
// Transfer: on a measured table, prior_trials (the same kernel on another target) are a
// training group of their own, and so is each related prior space (another table carried
// over by knob name, prior_space.hpp); operators get transfer_groups instead. The same
// kernel's prior trains the first fit, so the first proposals follow it (the warm start).
// Once 8 own trials succeeded, each prior group's weight follows how well a model of that
// prior alone ranks them (rho^3, model_guided_config.hpp), so a misleading prior fades
// instead of steering the search; another table's results join the fits only from then on
// (unjudged, they led the first proposals of a different kernel astray:
// docs/decisions/search-space-priors.md), capped by prior_space_cap.
// Resume: the state stores how many trials the last fit used; load_state refits on exactly
// those, so a deterministic model resumes exactly. Private to search/ (ensemble reuses it).
#pragma once

#include <memory>

#include "costmodel/retrain_policy.hpp"
#include "search/internal/strategy_base.hpp"
#include "search/model_guided_config.hpp"

namespace atvoss::search {

class ModelGuidedSearch : public StrategyBase {
 public:
  ModelGuidedSearch(std::string name, const ScheduleSpace& space, const TuneContext& context,
                    const ModelGuidedConfig& config);

 protected:
  void next_points(std::size_t n) override;
  Json save_extra() const override;
  void load_extra(const Json& extra) override;

  // Refits if the retrain policy says so; true if a fit is available afterwards.
  bool refresh_model();
  // Claims up to `target` points (batch size) chosen by `model`.
  void model_points(const costmodel::CostModel& model, std::size_t target);
  // The fitted model, or the heuristic before the first fit (nullptr: propose randomly).
  const costmodel::CostModel* ranking_model();
  const ModelGuidedConfig& config() const { return config_; }

 private:
  void fit(std::size_t records_used);
  std::unique_ptr<costmodel::CostModel> make_model() const;
  // The prior groups of a measured table: prior_trials, then each related prior space.
  void add_priors(const TuneContext& context);
  // Own successful trials from which the priors are judged by them.
  static constexpr std::size_t kJudgeFrom = 8;
  static bool can_judge(const costmodel::WorkloadGroup& own);
  // Weight of prior group `group` (an index of fixed_groups_) in a fit with the own trials `own`.
  double prior_weight(std::size_t group, const costmodel::WorkloadGroup& own);
  // Sets the weight of every prior group a fit with `own` uses; returns how many of
  // fixed_groups_ it uses (the prior spaces only once judged).
  std::size_t weigh_priors(const costmodel::WorkloadGroup& own);
  // Scores of `points` by `model`; a model that scores rows alone predicts each point once
  // until the next fit.
  std::vector<double> predict(const costmodel::CostModel& model, const std::vector<Point>& points);
  std::vector<double> scores_of(const costmodel::CostModel& model, const std::vector<Point>& points) const;
  std::vector<Point> initial_population();
  std::vector<Point> next_generation(const std::vector<Point>& pop, const std::vector<double>& scores);
  bool diverse(const Point& p, int min_knobs) const;
  // p differs from q in at least a third of the knobs (model_far_share).
  bool far_from(const Point& p, const Point& q) const;

  ModelGuidedConfig config_;
  std::unique_ptr<costmodel::CostModel> model_;
  std::unique_ptr<costmodel::CostModel> heuristic_;  // null when not used
  std::size_t trained_on_ = 0;                       // records used by the last fit
  bool fitted_ = false;                              // a fit happened (on the prior alone it used no records)
  costmodel::RetrainPolicy policy_;
  // transfer_groups, then the prior groups of a measured table from first_prior_ on: the
  // prior_trials (the same kernel on another target), then each related prior space, each a
  // group of its own; every fit adds the own trials for its duration.
  std::vector<costmodel::WorkloadGroup> fixed_groups_;
  std::size_t first_prior_ = 0;
  std::size_t space_groups_from_ = 0;  // the prior spaces' groups, to the end
  bool has_prior_ = false;             // prior_trials' group is there: enough for a first fit before any own trial
  // Per prior group (from first_prior_), fitted on it alone when first needed.
  std::vector<std::unique_ptr<costmodel::CostModel>> prior_models_;
  // Scores by the model at scored_by_ since its last fit; bounded like the validity cache.
  static constexpr std::size_t kScoreCacheLimit = 1u << 20;
  std::unordered_map<std::uint64_t, double> score_cache_;  // by ScheduleSpace::flat_index
  const costmodel::CostModel* scored_by_ = nullptr;
};

}  // namespace atvoss::search
