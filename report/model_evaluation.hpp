// Model evaluation: the variants that explain a model plan (plan/plan_model.hpp) beside its
// own (d) and the vendor default (a). Every task is re-simulated noise-free (so the variants
// differ only by schedule) under:
//   (b) cost-model zero-shot — a model that has never seen a measurement of this
//       task scores sampled valid schedules and its top pick is taken, without
//       measuring: the measured tasks are split into 5 folds and each fold's picks come
//       from a model trained on the other folds (with 5 or fewer measured tasks, that is
//       leave-one-out); a task with nothing measured uses the model of every measured task;
//   (c) tuned — the tiling tuned with fusion_level held at the vendor default's
//       level (the fastest stored schedule at that level, or the overall winner
//       moved to it, whichever is faster).
// Each VariantOp carries the schedule it timed, so that the caller can add the
// transposes between layers of differing layouts (plan/layout_choice.hpp).
// Threading: the caller's thread; reads only what it is given.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/target.hpp"
#include "db/record_store.hpp"
#include "frontend/precision.hpp"
#include "frontend/task_set.hpp"
#include "lowering/layout.hpp"
#include "report/html_report.hpp"

namespace atvoss::report {

using lowering::Layout;

struct EvaluationOptions {
  std::string cost_model = "xgboost";  // model kind used for the zero-shot pick
  // Valid schedules sampled per task for the zero-shot pick. Default 1000: enough for
  // a model's top pick to be meaningful, cheap to score.
  int zero_shot_candidates = 1000;
  // Records per other task used to train the zero-shot model (the best first).
  int train_per_task = 128;
  std::uint64_t seed = 0;
};

// The model (as given, before any precision) at the vendor default schedules in
// float16, in int8 and, when the job sets a precision, in the job's: fp16 -> int8 -> mixed.
std::vector<PrecisionRow> evaluate_precisions(const frontend::TaskSet& model, const frontend::PrecisionSpec& job,
                                              const Target& target);

// (b) and (c). histories: per task, its records on target (db::RecordStore::history), read once
// by the caller.
std::vector<ModelVariant> evaluate_variants(const std::vector<frontend::TuneTask>& tasks, const Target& target,
                                            const std::vector<std::vector<db::Record>>& histories,
                                            const EvaluationOptions& options = {});

}  // namespace atvoss::report
