// Planning: decides, once, what a tuned model (tuner/tuned_model.hpp) runs — the ModelPlan.
//   1. Each task's candidates, each timed noise-free (measured again on a real machine): its
//      fastest stored schedules, its fastest in each layout and at the default's fusion level
//      (and the winner moved to that level), the job's pick for a task never measured, and
//      the vendor default. A candidate slower than the default never wins: zero-shot picks,
//      layouts and fusion are all checked this way.
//   2. The conv layouts (layout_choice.hpp) over the fastest candidate in each layout, with
//      the transposes between them; each task then runs its fastest candidate in its layout.
//   3. The graph run (graph_run.hpp): the graph knobs searched, node order and streams, the
//      memory plan. Its makespan is the plan's figure; without a graph, the serial sum.
//   4. The model-level check: if the plan's figure is above the vendor default's (schedules
//      that win alone may lose side by side), the plan falls back to the vendor defaults
//      under its own searched knobs, which start from the default's, and says so.
// So end_to_end_us <= default_us for every model, at every budget.
// Lowering runs under the job's fusion rules (TunedModel::context). Deterministic for a job.
// Threading: the caller's thread.
#pragma once

#include <optional>
#include <vector>

#include "db/record.hpp"
#include "plan/graph_run.hpp"
#include "plan/layout_choice.hpp"
#include "plan/model_plan.hpp"
#include "plan/variant.hpp"
#include "tuner/tuned_model.hpp"

namespace atvoss::plan {

// The plan and the decisions it came from, for the report to show.
struct PlannedModel {
  ModelPlan plan;
  ModelVariant vendor_default;  // every task's default, with its transposes and fallbacks
  ModelVariant chosen;          // the plan's schedules as a variant
  std::optional<GraphRun> run;  // the plan's graph run; nullopt without a graph
  // Per task, the fastest candidate's time in each layout it has one in (empty: no layout knob).
  std::vector<std::map<lowering::Layout, double>> layout_times;
};

// The transposes v's schedules pay between layers of differing layouts, as variant rows.
std::vector<LayoutChangeRow> variant_transposes(const frontend::TaskSet& tasks, const ModelVariant& v,
                                                const TransposeCost& cost);

// Per task of tuned.tasks, its records on tuned.target, read from the job's database.
std::vector<std::vector<db::Record>> task_histories(const tuner::TunedModel& tuned);

// histories: task_histories(tuned).
PlannedModel plan_model(const tuner::TunedModel& tuned, const std::vector<std::vector<db::Record>>& histories);

}  // namespace atvoss::plan
