// Zero-shot picks: a schedule for a task chosen by a cost model without measuring it.
// A whole-model job gives every task its pick before anything is measured, so a task
// the budget never reaches still runs a chosen schedule (not the vendor default), and
// the pick's analytic time estimate orders the tasks by their share of the model's time
// (task_scheduler.hpp). The report's variant (b) picks the same way with a model trained
// on the other tasks' records (model_evaluation.hpp).
// Pure functions of their arguments (the sampling is seeded): thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"
#include "costmodel/cost_model.hpp"
#include "db/record_store.hpp"

namespace atvoss::tuner {

struct ZeroShotPick {
  Schedule schedule;
  // The plan's analytic time estimate for it (costmodel/features.hpp, est_time_us);
  // 0 where the workload has no plan (a recorded table).
  double estimate_us = 0;
};

// The vendor default first, then up to `count` distinct valid schedules sampled with seed.
std::vector<Schedule> zero_shot_candidates(const Workload& w, const Target& target, int count, std::uint64_t seed);

// model's top-scored schedule among zero_shot_candidates (the first of equal scores).
// REQUIRES: model.trained().
ZeroShotPick zero_shot_pick(const Workload& w, const Target& target, const costmodel::CostModel& model, int count,
                            std::uint64_t seed);

// How a pick is made with a model trained on measured records (the final picks below,
// and the report's variant (b)).
struct TrainedPickOptions {
  std::string cost_model = "xgboost";  // model kind
  // Valid schedules scored per task. Default 1000: enough for a model's top pick to be
  // meaningful, cheap to score.
  int candidates = 1000;
  int train_per_task = 128;  // records per measured task the model trains on, the best first
  std::uint64_t seed = 0;
};

// The training group of w: up to limit of its records, the best first and failures last,
// so that the model sees the region that matters.
costmodel::WorkloadGroup training_group(const Workload& w, const Target& target, const std::vector<db::Record>& history,
                                        int limit);

// model's top pick for w among zero_shot_candidates.
Schedule model_pick(const costmodel::CostModel& model, const Workload& w, const Target& target,
                    const TrainedPickOptions& options);

// For each workload with nothing measured, the top pick of one model trained on every
// measured one; nullopt for a measured workload, and for every workload when nothing is
// measured or no model could be trained. What a job runs for a task its budget never reached.
std::vector<std::optional<Schedule>> trained_picks(const std::vector<Workload>& workloads, const Target& target,
                                                   const db::RecordStore& records,
                                                   const TrainedPickOptions& options = {});

// The analytic time estimate of w under s on target (0 without a plan).
double estimate_us(const Workload& w, const Target& target, const Schedule& s);

}  // namespace atvoss::tuner
