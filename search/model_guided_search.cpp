// Read first: ModelGuidedSearch::model_points (one round), then refresh_model (retraining).
#include "search/internal/model_guided_search.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "core/error.hpp"
#include "core/json.hpp"
#include "costmodel/metrics.hpp"
#include "search/internal/strategies.hpp"

namespace atvoss::search {

ModelGuidedSearch::ModelGuidedSearch(std::string name, const ScheduleSpace& space, const TuneContext& o,
                                     const ModelGuidedConfig& config)
    : StrategyBase(std::move(name), space, o, config.evolution),
      config_(config),
      policy_(costmodel::RetrainOptions{config.retrain_fraction, 0}) {
  if (o.workload.op().empty()) {
    throw_bad_input(this->name() + " search: context.workload is required (the cost model featurises it)");
  }
  model_ = make_model();
  if (config.heuristic_before_fit && costmodel::has_plan_features(o.workload)) {
    heuristic_ = costmodel::make_cost_model("heuristic", o.seed);
  }
  // A measured table's features are its knob values, so the same kernel's results on
  // another target train the model as they are. An operator's records would need their own
  // workload's features; those come through transfer_groups instead.
  // The groups every fit trains on besides the own trials, built once: a fit then copies
  // none of them.
  fixed_groups_ = o.transfer_groups;
  first_prior_ = space_groups_from_ = fixed_groups_.size();
  if (!costmodel::has_plan_features(o.workload)) add_priors(o);
}

void ModelGuidedSearch::add_priors(const TuneContext& o) {
  const auto usable = [](std::vector<costmodel::Trial> samples) {
    std::erase_if(samples, [](const costmodel::Trial& t) { return is_infrastructure_error(t.status); });
    return samples;
  };
  auto same_kernel = usable(o.prior_trials);
  if (!same_kernel.empty()) {
    fixed_groups_.push_back({o.workload, o.target, std::move(same_kernel)});
    prior_models_.push_back(nullptr);
    has_prior_ = true;
  }
  // The prior spaces follow, from space_groups_from_ on; a fit includes them only once judged.
  space_groups_from_ = fixed_groups_.size();
  // Every fit trains on the carried rows: prior_space_rows in all, shared by the related
  // tables, of which at most kMaxPriorTables (a database may hold hundreds), the closest first.
  if (config_.prior_space_cap == 0) return;
  constexpr std::size_t kMaxPriorTables = 4;
  const auto chosen = related_tables(o.prior_spaces, space().knobs(), kMaxPriorTables);
  const auto rows = static_cast<std::size_t>(config_.prior_space_rows);
  const std::size_t per_table = std::max<std::size_t>(1, rows / std::max<std::size_t>(chosen.size(), 1));
  for (const std::size_t i : chosen) {
    // Seeded by the table's name, so that which other tables are listed changes no table's rows.
    const auto& table = o.prior_spaces[i];
    auto samples = usable(map_prior(table, space(), o.seed ^ fnv1a64(table.name), per_table));
    if (samples.empty()) continue;
    fixed_groups_.push_back({o.workload, o.target, std::move(samples)});
    prior_models_.push_back(nullptr);
  }
}

std::unique_ptr<costmodel::CostModel> ModelGuidedSearch::make_model() const {
  const TuneContext& o = context();
  std::unique_ptr<costmodel::CostModel> m;
  if (o.model_factory) {
    m = o.model_factory();
  } else {
    costmodel::ModelOptions mo;
    mo.kind = o.cost_model;
    mo.seed = o.seed;
    if (o.model_threads > 0) mo.nthread = o.model_threads;
    m = costmodel::make_cost_model(mo);
  }
  if (!m) throw_bad_input(name() + " search: context.model_factory returned no model");
  return m;
}

bool ModelGuidedSearch::can_judge(const costmodel::WorkloadGroup& own) {
  const auto ok = std::count_if(own.samples.begin(), own.samples.end(),
                                [](const costmodel::Trial& s) { return s.status == Status::ok; });
  return static_cast<std::size_t>(ok) >= kJudgeFrom;
}

double ModelGuidedSearch::prior_weight(std::size_t group, const costmodel::WorkloadGroup& own) {
  // A prior counts in full until the own trials can judge it; then by how well a model of
  // the prior alone ranks them (Spearman rho, failures as the slowest), since another
  // target's landscape may rank this one well (a whole table) or poorly (a short run's
  // biased sample, another kernel). Weight rho^3, floored; the constants were chosen on the
  // reverse transfer (docs/decisions/search-defaults.md).
  constexpr double kExponent = 3, kFloor = 1e-3;
  if (!can_judge(own)) return 1.0;
  auto& model = prior_models_[group - first_prior_];
  if (!model) {
    model = make_model();
    model->train(std::span(&fixed_groups_[group], 1));
  }
  const double rho = costmodel::evaluate(*model, std::span(&own, 1)).spearman;
  return std::max(std::pow(std::max(rho, 0.0), kExponent), kFloor);
}

std::size_t ModelGuidedSearch::weigh_priors(const costmodel::WorkloadGroup& own) {
  for (std::size_t g = first_prior_; g < space_groups_from_; ++g) fixed_groups_[g].weight = prior_weight(g, own);
  // Other tables join only once judged, and together weigh at most prior_space_cap times the
  // own trials: their landscape guides the search, then yields to this one's.
  if (!can_judge(own)) return space_groups_from_;
  double mass = 0;
  for (std::size_t g = space_groups_from_; g < fixed_groups_.size(); ++g) {
    fixed_groups_[g].weight = prior_weight(g, own);
    mass += fixed_groups_[g].weight * static_cast<double>(fixed_groups_[g].samples.size());
  }
  const double cap = config_.prior_space_cap * static_cast<double>(own.samples.size());
  for (std::size_t g = space_groups_from_; mass > cap && g < fixed_groups_.size(); ++g)
    fixed_groups_[g].weight *= cap / mass;
  return fixed_groups_.size();
}

const costmodel::CostModel* ModelGuidedSearch::ranking_model() {
  if (refresh_model()) return model_.get();
  return heuristic_.get();
}

void ModelGuidedSearch::next_points(std::size_t n) {
  if (const auto* model = ranking_model()) model_points(*model, n);
  fill_random(n);  // no fit yet, or the model's candidates ran out
}

bool ModelGuidedSearch::refresh_model() {
  // The minimum counts successes (a fit needs times to rank); growth counts every trial.
  // The same kernel's prior is enough for the first fit: the other target's landscape ranks
  // from round one.
  const bool enough = successes() >= static_cast<std::size_t>(config_.min_train_samples) || has_prior_;
  if (enough && policy_.should_retrain(records().size())) fit(records().size());
  return model_->trained();
}

void ModelGuidedSearch::fit(std::size_t records_used) {
  costmodel::WorkloadGroup own{context().workload, context().target, {}};
  for (std::size_t i = 0; i < records_used; ++i) {
    const auto& r = records()[i];
    own.samples.push_back({space().schedule_at(r.point), r.status, r.time_us});
  }
  const std::size_t used = weigh_priors(own);
  // The own trials join the groups in use, after them, for this fit only.
  const auto at = fixed_groups_.begin() + static_cast<std::ptrdiff_t>(used);
  fixed_groups_.insert(at, std::move(own));
  try {
    model_->train(std::span(fixed_groups_.data(), used + 1));
  } catch (...) {
    fixed_groups_.erase(fixed_groups_.begin() + static_cast<std::ptrdiff_t>(used));
    throw;
  }
  fixed_groups_.erase(fixed_groups_.begin() + static_cast<std::ptrdiff_t>(used));
  fitted_ = true;
  score_cache_.clear();
  trained_on_ = records_used;
  policy_.mark_trained(records_used);
}

std::vector<double> ModelGuidedSearch::scores_of(const costmodel::CostModel& model,
                                                 const std::vector<Point>& points) const {
  std::vector<Schedule> schedules;
  schedules.reserve(points.size());
  for (const auto& p : points) schedules.push_back(space().schedule_at(p));
  auto scores = model.predict(context().workload, context().target, schedules);
  if (scores.size() != points.size()) {
    throw Error(ErrorKind::internal, "cost model returned " + std::to_string(scores.size()) + " scores for " +
                                         std::to_string(points.size()) + " schedules");
  }
  return scores;
}

std::vector<double> ModelGuidedSearch::predict(const costmodel::CostModel& model, const std::vector<Point>& points) {
  // A space too large for flat indices (size() saturates) is not cached.
  if (!model.scores_rows_alone() || space().size() == UINT64_MAX) return scores_of(model, points);
  // A point's score then depends only on the model, so scores are kept until the next fit:
  // successive rounds revisit the best measured trials and their neighbours, and the model
  // is refitted only every retrain_fraction of new trials.
  if (&model != scored_by_ || score_cache_.size() >= kScoreCacheLimit) {
    score_cache_.clear();
    scored_by_ = &model;
  }
  std::vector<std::uint64_t> keys;
  keys.reserve(points.size());
  std::vector<Point> missing;
  std::vector<std::uint64_t> missing_keys;
  for (const auto& p : points) {
    keys.push_back(space().flat_index(p));
    // NaN marks a point queued in this call, so a repeated point is predicted once.
    if (score_cache_.emplace(keys.back(), std::nan("")).second) {
      missing.push_back(p);
      missing_keys.push_back(keys.back());
    }
  }
  if (!missing.empty()) {
    std::vector<double> scores;
    try {
      scores = scores_of(model, missing);
    } catch (...) {
      score_cache_.clear();  // drop the placeholders
      throw;
    }
    for (std::size_t i = 0; i < missing.size(); ++i) score_cache_[missing_keys[i]] = scores[i];
  }
  std::vector<double> out;
  out.reserve(points.size());
  for (auto k : keys) out.push_back(score_cache_.at(k));
  return out;
}

std::vector<Point> ModelGuidedSearch::initial_population() {
  const auto size = static_cast<std::size_t>(config_.model_population);
  std::vector<Point> pop;
  for (const PointTrial* r : best_records(static_cast<std::size_t>(config_.seed_from_measured * size))) {
    pop.push_back(r->point);
  }
  for (std::size_t tries = 0; pop.size() < size && tries < 64 * size; ++tries) {
    Point p = space().random_point(rng());
    if (valid(p)) pop.push_back(std::move(p));
  }
  return pop;
}

std::vector<Point> ModelGuidedSearch::next_generation(const std::vector<Point>& pop,
                                                      const std::vector<double>& scores) {
  const auto pick = [&]() -> const Point& {  // tournament of two on predicted score
    const std::size_t a = rng()() % pop.size(), b = rng()() % pop.size();
    return scores[a] >= scores[b] ? pop[a] : pop[b];
  };
  const std::size_t dims = space().dimensions();
  std::vector<Point> next;
  next.reserve(pop.size());
  while (next.size() < pop.size()) {
    const Point& a = pick();
    Point child = a;
    if (uniform01() < 0.5) {
      const Point& b = pick();
      for (std::size_t d = 0; d < dims; ++d) {
        if (uniform01() < config_.evolution.crossover_rate) child[d] = b[d];
      }
    }
    mutate_knob(child, rng()() % dims);
    for (std::size_t d = 0; d < dims; ++d) {
      if (uniform01() < config_.evolution.mutation_rate / 2) mutate_knob(child, d);
    }
    int repair = 0;
    while (!valid(child) && repair++ < 3) mutate_knob(child, rng()() % dims);
    next.push_back(valid(child) ? std::move(child) : a);  // rejected children keep the parent
  }
  return next;
}

namespace {

// p and q differ in at least n knobs; stops counting once they do.
bool differ_in_at_least(const Point& p, const Point& q, std::size_t n) {
  std::size_t differ = 0;
  for (std::size_t d = 0; d < p.size() && differ < n; ++d) differ += p[d] != q[d];
  return differ >= n;
}

}  // namespace

bool ModelGuidedSearch::far_from(const Point& p, const Point& q) const {
  // A third of all knobs, those of one value included (which never differ): counting only
  // the knobs that vary was tried and the restart lost by rotation (docs/decisions/search-defaults.md).
  return differ_in_at_least(p, q, (p.size() + 2) / 3);
}

bool ModelGuidedSearch::diverse(const Point& p, int min_knobs) const {
  return std::all_of(batch().begin(), batch().end(),
                     [&](const Point& q) { return differ_in_at_least(p, q, static_cast<std::size_t>(min_knobs)); });
}

void ModelGuidedSearch::model_points(const costmodel::CostModel& model, std::size_t target) {
  // Every unmeasured valid point visited, with its score, in first-visit order.
  std::vector<Point> cands;
  std::vector<double> cand_scores;
  PointSet visited;
  std::vector<Point> pop = initial_population();
  if (pop.empty()) return;
  for (int g = 0;; ++g) {
    const auto scores = predict(model, pop);
    for (std::size_t i = 0; i < pop.size(); ++i) {
      if (!seen(pop[i]) && visited.insert(pop[i]).second) {
        cands.push_back(pop[i]);
        cand_scores.push_back(scores[i]);
      }
    }
    if (g >= config_.model_generations) break;
    pop = next_generation(pop, scores);
  }
  std::vector<std::size_t> order(cands.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return cand_scores[a] > cand_scores[b]; });
  std::vector<bool> used(order.size(), false);
  const auto incumbent = best_records(1);
  // Trials recorded since the best one, the best included.
  const auto since_best = [&] { return records().size() - static_cast<std::size_t>(incumbent[0] - records().data()); };
  bool stalled =
      config_.model_stall > 0 && !incumbent.empty() && since_best() > static_cast<std::size_t>(config_.model_stall);
  // The best-scored unused candidate, diverse from the batch, far from the incumbent if asked.
  const auto pick = [&](bool need_far) {
    for (int min_knobs : {config_.diversity_knobs, 1}) {
      for (std::size_t i = 0; i < order.size(); ++i) {
        const Point& c = cands[order[i]];
        if (used[i] || !diverse(c, min_knobs)) continue;
        if (need_far && !far_from(c, incumbent[0]->point)) continue;
        if (is_new_valid(c)) return i;
      }
    }
    return order.size();
  };
  while (claimed() < target) {
    if (uniform01() < config_.epsilon) {
      fill_random(claimed() + 1);
      continue;
    }
    // Short-circuits at share 0, so the RNG stream is the same as without the option.
    // A stalled search restarts with one slot per batch (each slot at batch 1).
    const bool far = std::exchange(stalled, false) ||
                     (config_.model_far_share > 0 && !incumbent.empty() && uniform01() < config_.model_far_share);
    std::size_t chosen = pick(far);
    if (chosen == order.size() && far) chosen = pick(false);  // no distant candidate
    if (chosen == order.size()) return;                       // candidates exhausted; the caller tops up randomly
    used[chosen] = true;
    claim(cands[order[chosen]]);
  }
}

Json ModelGuidedSearch::save_extra() const { return {{"trained_on", trained_on_}, {"fitted", fitted_}}; }

void ModelGuidedSearch::load_extra(const Json& extra) {
  // Called by load_state after the trials are restored: refit on exactly the same prefix.
  const auto n = require_int(extra, "trained_on", name() + " search state");
  if (n < 0 || static_cast<std::size_t>(n) > records().size()) {
    throw_bad_input(name() + " search state: field 'trained_on' must be 0.." + std::to_string(records().size()));
  }
  trained_on_ = 0;
  fitted_ = false;
  // A fit on the prior alone used no trials: "fitted" tells it from "never fitted".
  const Json& fitted = extra.contains("fitted") ? extra["fitted"] : Json(n > 0);
  if (!fitted.is_boolean()) throw_bad_input(name() + " search state: field 'fitted' must be a boolean");
  if (n > 0 || fitted.get<bool>()) fit(static_cast<std::size_t>(n));
}

StrategyEntry model_guided_strategy() {
  StrategyEntry e;
  e.name = "model-guided";
  e.make = [](const ScheduleSpace& space, const TuneContext& c, const Json& config) {
    return std::make_unique<ModelGuidedSearch>("model-guided", space, c, ModelGuidedConfig::from_json(config));
  };
  takes_config<ModelGuidedConfig>(e);
  e.uses_cost_model = true;
  // A measured table's features are its knob values, so the same kernel elsewhere trains it.
  e.uses_prior = [](const Workload& w) { return w.is_table(); };
  return e;
}

}  // namespace atvoss::search
