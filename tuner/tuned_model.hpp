// TunedModel: what a tuning job hands on (tuner/job_runner.hpp), and all a report needs
// besides the database: the model as given and as tuned, each task's trials and times,
// what each task never measured runs, and the progress bar, still open so that it ends
// on the end-to-end figure the report computes (report/job_report.hpp), and the job's
// context (its fusion rules), under which the report lowers what the job tuned.
// Plain value type (the bar is shared); not thread-safe.
#pragma once

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "core/target.hpp"
#include "frontend/device_memory.hpp"
#include "frontend/precision.hpp"
#include "frontend/task_set.hpp"
#include "tuner/job_context.hpp"
#include "tuner/job_spec.hpp"
#include "tuner/progress.hpp"
#include "tuner/zero_shot.hpp"

namespace atvoss::tuner {

struct TunedTask {
  int trials = 0;                                               // stored in the database for this task on this target
  double best_us = std::numeric_limits<double>::infinity();     // fastest measured; inf: none
  double default_us = std::numeric_limits<double>::infinity();  // the vendor default's, measured; inf: not measured
  ZeroShotPick zero_shot;  // the analytic pick every task got before anything was measured
  // What the task runs when nothing of it was measured: the pick of a model trained on
  // every task the job measured, else its zero-shot pick. nullopt for a measured task.
  std::optional<Schedule> pick;
  bool finished = false;  // the scheduler gave up on it (exhausted or early-stopped)
};

struct TunedModel {
  JobSpec spec;
  Target target;
  frontend::TaskSet model;  // as the user gave it, before precision
  frontend::PrecisionSpec precision;
  std::vector<std::string> precision_warnings;  // from fit_precision, also in --json
  frontend::TaskSet tasks;                      // as tuned: precision applied, unschedulable ones moved to fallbacks
  std::vector<TunedTask> results;               // per tasks.tasks()
  frontend::MemoryFit memory;
  int trials = 0;          // stored over all tasks after the run
  int resumed_trials = 0;  // found in the database at the start
  int measured = 0;        // stored by this run
  // The end's confirmation on a real machine (TuneOptions::confirm_top): tasks whose fastest
  // schedules were measured again, and how many of them it gave another winner.
  int confirmed_tasks = 0;
  int confirm_changed = 0;
  std::shared_ptr<Progress> progress;
  JobContext context;  // the rules the job ran under: open a JobScope to lower as it did

  int tasks_tuned() const;  // tasks with a measured schedule
  std::vector<TaskLine> task_lines() const;
};

}  // namespace atvoss::tuner
