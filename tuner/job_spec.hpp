// JobSpec: a batch tuning job as read from its JSON file (schema in
// docs/job-spec.md). Every field is validated on load, and an error names the
// field and what was expected; unknown fields are rejected so a typo never
// silently drops a setting. Relative paths are resolved against the current
// directory, like any command-line path.
// Plain value type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/launch_mode.hpp"
#include "core/workload.hpp"
#include "frontend/precision.hpp"
#include "frontend/training.hpp"
#include "lowering/fusion_rules.hpp"

namespace atvoss::tuner {

struct WeightedWorkload {
  Workload workload;
  int weight = 1;
  std::string name;
};

// "parallel": the model over many devices (report/parallel_report.hpp): the tuned schedules'
// times go into a plan searched over tensor, pipeline and data parallelism.
struct ParallelSpec {
  int devices = 1;
  std::string topology;           // preset, file or inline JSON; checked before tuning (report/)
  std::string mode = "training";  // training: the model's training step; inference: as it is
  std::string plan_path;          // default "<name>-plan.json"
  int trials = 64;                // plans simulated by the search
};

struct JobSpec {
  std::string name;    // required; identifies the job in the database
  std::string target;  // required: a preset name, a file, or inline JSON text
  std::string model;   // zoo name or .onnx path; empty if only workloads
  int batch = 0;       // the model's batch: 0 is the zoo model's own, or 1 for an ONNX file's symbolic dims
  // "inference": the model as it is; "training": its training step (frontend/training.hpp)
  std::string mode = "inference";
  frontend::TrainingSetup training;  // "optimizer" and "mixed_precision": how a training step updates
  // Who issues the kernels (core/launch_mode.hpp): every figure of the job counts its cost.
  // Not given: the target's own (Target::launch).
  std::optional<LaunchMode> launch;
  std::vector<WeightedWorkload> workloads;  // explicit tasks (added to the model's)
  frontend::PrecisionSpec precision;        // empty: every layer in the model's own dtype
  int trials = 0;                           // required: total trial budget over all tasks
  std::string strategy = "model-guided";
  // The strategy's own JSON config (search/*_config.hpp: keys, ranges, defaults); checked
  // against the strategy when the job runs, since a strategy may be registered after the
  // spec is read (Python).
  Json strategy_config = Json::object();
  std::string cost_model = "xgboost";
  std::string scheduler = "gradient";  // gradient or round_robin
  // "fusion_rules": rules declared in the spec (objects), in force for this job only
  // (job_context.hpp), and names of rules this process has registered already
  // (strings), checked on load.
  std::vector<lowering::FusionRule> fusion_rules;
  std::vector<std::string> fusion_rule_names;
  int early_stopping = 0;  // per task: trials without >=0.1% gain; 0 = never
  int batch_size = 16;     // schedules measured per round of a task
  int repeat = 3;
  std::uint64_t seed = 0;
  std::string database;     // default "<name>.db"
  std::string farm;         // "host:port"; empty = local measurer
  std::string export_path;  // default "<name>-table.json"
  std::string report_path;  // default "<name>-report.html"
  // The model plan (plan/model_plan.hpp). Default beside the table: "x-table.json" ->
  // "x-model-plan.json" (so "<name>-model-plan.json" when export is defaulted too).
  std::string model_plan_path;
  std::optional<ParallelSpec> parallel;
  Json source;  // the JSON it was read from

  // bad_input naming the field on any problem.
  static JobSpec from_json(const Json& j);
  static JobSpec load(const std::string& path);
};

}  // namespace atvoss::tuner
