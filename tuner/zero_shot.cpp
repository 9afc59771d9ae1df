#include "tuner/zero_shot.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "backend/backend.hpp"
#include "costmodel/features.hpp"

namespace atvoss::tuner {

std::vector<Schedule> zero_shot_candidates(const Workload& w, const Target& target, int count,
                                           std::uint64_t seed) {
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

ZeroShotPick zero_shot_pick(const Workload& w, const Target& target, const costmodel::CostModel& model,
                            int count, std::uint64_t seed) {
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

}  // namespace atvoss::tuner
