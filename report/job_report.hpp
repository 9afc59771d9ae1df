// Job report: what a tuned model (tuner/tuned_model.hpp) and its plan (plan/plan_model.hpp)
// come to. Shows the plan beside the variants that explain it (model_evaluation.hpp) and the
// precisions, counts what fusion removed (fusion_report.hpp), writes the HTML report
// (html_report.hpp) and states the job's one end-to-end figure, the plan's, the same in the
// summary, --json, the report and the progress bar's last line.
// Threading: the caller's thread; reads the job's database.
#pragma once

#include <string>

#include "core/json.hpp"
#include "execution/memory_plan.hpp"
#include "frontend/device_memory.hpp"
#include "plan/plan_model.hpp"
#include "tuner/job_runner.hpp"
#include "tuner/tuned_model.hpp"

namespace atvoss::report {

struct JobOutcome {
  int tasks = 0;
  int tasks_tuned = 0;     // tasks with a measured schedule; the rest run their zero-shot pick
  int trials = 0;          // stored trials over all tasks after the run
  int resumed_trials = 0;  // found in the database at the start
  int measured = 0;        // stored by this run
  // The job's one end-to-end figure, the same in the summary, --json and the report: the
  // plan's (plan/model_plan.hpp end_to_end_us: its graph run, or without a graph the serial
  // sum), and the vendor default's same figure. tuned_us <= default_us always.
  double default_us = 0;
  double tuned_us = 0;
  double fallback_us = 0;  // the nodes not tuned (frontend/fallback.hpp), in both figures
  int layout_changes = 0;  // transposes between layers of differing layouts (layout_choice.hpp)
  double layout_changes_us = 0;
  std::string database, table, model_plan, report;
  frontend::MemoryFit memory;  // the model's weights and peak activations against the device memory
  Json summary;                // per-task detail for --json
  // The model's graph run under the chosen schedules (plan/graph_run.hpp): its memory plan.
  execution::MemoryPlan memory_plan;
  plan::ModelPlan plan;  // what was exported (run_and_report)
};

// Evaluates the tuned model under its job's fusion rules (TunedModel::context), writes its
// HTML report (spec.report_path) and ends its progress bar on the plan's figure.
// histories: plan::task_histories(tuned).
JobOutcome report_job(const tuner::TunedModel& tuned, const plan::PlannedModel& planned,
                      const std::vector<std::vector<db::Record>>& histories);

// tuner::run_job, plan::plan_model, plan::export_plan (the table and the model plan), then
// report_job: what atvoss-tune and the Python binding run.
JobOutcome run_and_report(const tuner::JobSpec& spec, const tuner::JobRunOptions& options = {});

}  // namespace atvoss::report
