// Model analysis: how well each layer of a tuned model uses the chip, read from the
// simulator's profile of the schedule every task runs (atvoss-analyze --job,
// --db/--model). Per layer: bandwidth utilisation, compute-unit activity and sync share,
// whether its roofline bound is memory or compute, and which of the usual bars it breaks:
//   bandwidth < 85% while memory-bound, compute < 70% while compute-bound, sync > 5%.
// Definitions (docs/job-spec.md, "Analysing a tuned model"), over the kernels' own time
// (the time less kernel launches, as a profiler times a kernel):
//   bandwidth  GM traffic / that time over the target's HBM peak, at most 1
//   compute    matrix ops: achieved / peak MAC rate; vector ops: vector-unit busy share
//   sync       time stalled on pipeline flags / that time
//   bound      FLOPs / peak vs compulsory bytes / HBM bandwidth, whichever is longer
// That schedule is the job's exported table entry, the model plan's (plan/export.hpp); without
// a table (--db/--model, or a job stopped before its end), the best stored schedule, else the
// default. A task whose schedule is not a measured one is marked untuned.
// Where to look: layers are ranked by their share of the model's time (weight x time
// over the sum), and only the heaviest layers that together hold top_share of it are
// flagged, each bar with its hint; a lighter layer that breaks a bar is listed, not
// flagged (a 2% gain on 0.1% of the time is not where a user should look).
// Threading: the caller's thread; reads the database only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "core/target.hpp"
#include "db/record_store.hpp"
#include "db/table/schedule_table.hpp"
#include "frontend/task_set.hpp"
#include "tuner/job_spec.hpp"

namespace atvoss::report {

struct UtilisationBars {
  double bandwidth = 0.85;  // memory-bound layers below it are flagged
  double compute = 0.70;    // compute-bound layers below it are flagged
  double sync = 0.05;       // any layer above it is flagged
  double top_share = 0.8;   // flags go to the heaviest layers holding this share of the time
};

struct LayerAnalysis {
  std::string name;   // the task's first layer
  std::string label;  // the workload, in words
  int weight = 1;
  bool tuned = false;  // false: no valid stored schedule (see source)
  std::string source;  // "measured", "zero-shot" (the job's exported pick) or "default"
  Schedule schedule;
  double time_us = 0;                           // noise-free, the schedule as profiled
  std::string bound;                            // "memory" or "compute"
  double bandwidth = 0, compute = 0, sync = 0;  // 0..1
  double share = 0;                             // weight x time_us over the model's sum
  std::vector<std::string> flags;               // e.g. "bandwidth 62% < 85% (memory-bound)"
  std::vector<std::string> hints;               // what to try, one per flag
  std::vector<std::string> minor;               // bars broken by a layer too light to flag
};

struct ModelAnalysis {
  std::string model, target;
  std::vector<LayerAnalysis> layers;  // heaviest share of the model's time first
  int flagged() const;
  double flagged_share() const;  // of the model's time, in the flagged layers
  Json to_json() const;
};

// Every task of tasks on target, from its best record in records; a task with none at its
// entry in table (when given), else its default. bad_input if the target is not simulated
// (a host CPU has no such profile).
ModelAnalysis analyze_tuned_model(const frontend::TaskSet& tasks, const Target& target, const db::RecordStore& records,
                                  const UtilisationBars& bars = {}, const table::ScheduleTable* table = nullptr);

// The job's tasks (precision applied), target and database (which must exist: bad_input
// naming field 'database' otherwise), and its exported table where it exists, under the
// job's declared fusion rules (in force for the call, never registered).
ModelAnalysis analyze_job(const tuner::JobSpec& spec, const UtilisationBars& bars = {});
// The job spec file at path (bad_input naming --job if it cannot be read as one).
ModelAnalysis analyze_job_file(const std::string& path, const UtilisationBars& bars = {});

// A model (zoo name or .onnx path) tuned into the database at db_path for target_arg (a
// preset, file or inline JSON). bad_input naming --db, --model or --target on bad input.
ModelAnalysis analyze_stored_model(const std::string& db_path, const std::string& model, const std::string& target_arg,
                                   const UtilisationBars& bars = {});

// The per-layer table with flagged layers marked, then a line counting them.
std::string format_model_analysis(const ModelAnalysis& a, const UtilisationBars& bars = {});

}  // namespace atvoss::report
