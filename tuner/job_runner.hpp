// JobRunner: runs a batch tuning job (JobSpec) — expands the model into tasks,
// spreads the trial budget over them with the TaskScheduler, tunes each task round by
// round (TuningSession), chooses what each task never measured runs, exports the lookup
// table, and returns the tuned model (tuned_model.hpp). The evaluation, the end-to-end
// figure and the HTML report are built from that (report/job_report.hpp).
//
// Resumable: the database is the source of truth. Rerunning the same job (also
// after kill -9) reopens it: every stored record counts and is never measured
// again, each task's best is restored, and the scheduler's state (job row) and each
// task's search state (job_tasks row), saved after every round, are restored too.
// Trials stored by an earlier run count against the budget, so a finished job rerun
// measures nothing.
//
// Order of checks: everything the user can get wrong (target, model, ONNX file,
// workloads, strategy, farm address) is validated before the database is opened,
// so bad input never touches it (exit 2, database untouched).
// Threading: run() on one thread; measurement may use a pool internally.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "core/cancel.hpp"
#include "frontend/device_memory.hpp"
#include "frontend/task_set.hpp"
#include "tuner/job_spec.hpp"
#include "tuner/measurer.hpp"
#include "tuner/progress.hpp"
#include "tuner/tuned_model.hpp"
#include "tuner/tuner.hpp"

namespace atvoss::tuner {

struct JobRunOptions {
  bool quiet = false;
  std::string farm;  // overrides the spec's farm when non-empty (--farm)
  // Builds the measurer: given the farm address ("" = local), returns a Measurer.
  // Default: make_job_measurer.
  std::function<std::unique_ptr<Measurer>(const std::string& farm)> make_measurer;
  // Where the warning goes that a model does not fit the device memory (printed before
  // tuning, also when quiet: it is not progress). Default: std::cerr.
  std::ostream* warnings = nullptr;
  // Stop after this many rounds (tests simulate an interrupted job); 0 = no limit.
  int max_rounds = 0;
  // Task sessions kept alive at once (>= 1). Each holds its strategy with its transfer
  // data and validity cache, a few MB: a 300-task job kept them all and peaked at 650 MB.
  // The least recently used is dropped and, when its task is picked again, rebuilt from
  // its saved state as on resume, so the job measures exactly what it would otherwise.
  int live_sessions = 32;
  // Called between rounds, once each round's records and the job's state are committed.
  // An exception it throws stops the job (state "stopped", resumable as after a kill) and
  // propagates out of run_job: how the Python binding lets Ctrl-C through.
  std::function<void()> on_round;
  // Each trial of every task as it finishes (TuneCallbacks::on_trial), its number and
  // budget the job's, best_us its task's.
  std::function<void(const TrialProgress&)> on_trial;
  // Raised by the caller (Ctrl-C in Python): the round in flight stores what finished
  // (TuneOptions::cancel), then the job stops as on_round's exception stops it, with an
  // io error "cancelled".
  CancelFlag cancel = {};
};

// The embedded default: LocalMeasurer on all cores when farm is empty; otherwise
// a FarmMeasurer, after checking that host:port accepts connections (bad_input
// "unreachable" if not, so a wrong address is reported before anything runs).
std::unique_ptr<Measurer> make_job_measurer(const std::string& farm);

// The tasks of a spec: its model (zoo name or .onnx file) plus its explicit workloads,
// as the model gives them (model_tasks) and with the spec's precision applied (tasks_of).
frontend::TaskSet model_tasks(const JobSpec& spec);
frontend::TaskSet tasks_of(const JobSpec& spec);
// The spec's target as the job runs it: launched in its launch mode (core/launch_mode.hpp).
// bad_input naming the field.
Target job_target(const JobSpec& spec);

TunedModel run_job(const JobSpec& spec, const JobRunOptions& options = {});

}  // namespace atvoss::tuner
