#include "tuner/zero_shot.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "costmodel/features.hpp"

namespace atvoss::tuner {

std::vector<Schedule> zero_shot_candidates(const Workload& w, const Target& target, int count, std::uint64_t seed) {
  const Schedule def = backend::required_default(w, target);
  const ScheduleSpace space = backend::space_for(w, target);
  std::mt19937_64 rng(seed ^ fnv1a64(w.key()));
  std::set<Schedule> seen{def};
  std::vector<Schedule> candidates{def};
  for (int i = 0; i < (count + 1) * 4 && static_cast<int>(candidates.size()) <= count; ++i) {
    auto p = space.random_valid_point(rng, 200);
    if (!p) break;
    Schedule s = space.schedule_at(*p);
    if (seen.insert(s).second) candidates.push_back(std::move(s));
  }
  return candidates;
}

ZeroShotPick zero_shot_pick(const Workload& w, const Target& target, const costmodel::CostModel& model, int count,
                            std::uint64_t seed) {
  const auto candidates = zero_shot_candidates(w, target, count, seed);
  const auto scores = model.predict(w, target, candidates);
  const auto best = std::max_element(scores.begin(), scores.end()) - scores.begin();
  return {candidates[best], estimate_us(w, target, candidates[best])};
}

double estimate_us(const Workload& w, const Target& target, const Schedule& s) {
  if (!costmodel::has_plan_features(w)) return 0;
  static const std::size_t est = costmodel::feature_index("est_time_us");
  const auto row = costmodel::features(w, target, s);
  return std::exp2(double(row[est])) - 1;  // the feature is log2(1 + us)
}

costmodel::WorkloadGroup training_group(const Workload& w, const Target& target, const std::vector<db::Record>& history,
                                        int limit) {
  costmodel::WorkloadGroup g{w, target, {}};
  std::vector<const db::Record*> sorted;
  for (const auto& r : history) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), [](const db::Record* a, const db::Record* b) {
    if (a->measurement.ok() != b->measurement.ok()) return a->measurement.ok();
    return a->measurement.ok() && a->measurement.time_us < b->measurement.time_us;
  });
  for (const auto* r : sorted) {
    if (static_cast<int>(g.samples.size()) >= limit) break;
    g.samples.push_back({r->schedule, r->measurement.status, r->measurement.time_us});
  }
  return g;
}

Schedule model_pick(const costmodel::CostModel& model, const Workload& w, const Target& target,
                    const TrainedPickOptions& options) {
  const auto candidates = zero_shot_candidates(w, target, options.candidates - 1, options.seed);
  const auto scores = model.predict(w, target, candidates);
  return candidates[std::max_element(scores.begin(), scores.end()) - scores.begin()];
}

std::vector<std::optional<Schedule>> trained_picks(const std::vector<Workload>& workloads, const Target& target,
                                                   const db::RecordStore& records, const TrainedPickOptions& options) {
  const auto target_key = db::TargetInfo::from_target(target).key;
  std::vector<costmodel::WorkloadGroup> measured;
  std::vector<bool> has(workloads.size(), false);
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    auto g =
        training_group(workloads[i], target, records.history(workloads[i].key(), target_key), options.train_per_task);
    has[i] = !g.samples.empty();
    if (has[i]) measured.push_back(std::move(g));
  }
  std::vector<std::optional<Schedule>> picks(workloads.size());
  if (measured.empty()) return picks;
  auto model = costmodel::make_cost_model(options.cost_model, options.seed);
  try {
    model->train(measured);
  } catch (const Error&) {
    return picks;
  }
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    if (!has[i]) picks[i] = model_pick(*model, workloads[i], target, options);
  }
  return picks;
}

}  // namespace atvoss::tuner
