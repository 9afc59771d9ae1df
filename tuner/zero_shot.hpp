// Zero-shot picks: a schedule for a task chosen by a cost model without measuring it.
// A whole-model job gives every task its pick before anything is measured, so a task
// the budget never reaches still runs a chosen schedule (not the vendor default), and
// the pick's analytic time estimate orders the tasks by their share of the model's time
// (task_scheduler.hpp). The report's variant (b) picks the same way with a model trained
// on the other tasks' records (model_evaluation.hpp).
// Pure functions of their arguments (the sampling is seeded): thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "core/schedule.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"
#include "costmodel/cost_model.hpp"

namespace atvoss::tuner {

struct ZeroShotPick {
  Schedule schedule;
  // The plan's analytic time estimate for it (costmodel/features.hpp, est_time_us);
  // 0 where the workload has no plan (a recorded table).
  double estimate_us = 0;
};

// The vendor default first, then up to `count` distinct valid schedules sampled with seed.
std::vector<Schedule> zero_shot_candidates(const Workload& w, const Target& target, int count,
                                           std::uint64_t seed);

// model's top-scored schedule among zero_shot_candidates (the first of equal scores).
// REQUIRES: model.trained().
ZeroShotPick zero_shot_pick(const Workload& w, const Target& target, const costmodel::CostModel& model,
                            int count, std::uint64_t seed);

// The analytic time estimate of w under s on target (0 without a plan).
double estimate_us(const Workload& w, const Target& target, const Schedule& s);

}  // namespace atvoss::tuner
