// Model plan: what a model runs, decided once after tuning (plan.hpp) — each task's schedule,
// checked against the vendor default; each conv's layout and the transposes between layouts;
// the graph run's knobs, node order, streams and memory plan; and the one end-to-end figure
// those decisions come to. The report renders it, the export writes it (export.hpp: the lookup
// table holds exactly its schedules, the plan file all of it), and anyone holding the plan file
// can recompute its figure (recompute.hpp). The file's format is docs/model-plan.md.
// Plain value type; not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/schedule.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"
#include "execution/memory_plan.hpp"
#include "frontend/graph.hpp"
#include "plan/graph_tuning.hpp"

namespace atvoss::plan {

// Where a task's schedule comes from.
inline constexpr const char* kMeasured = "measured";   // the job measured it
inline constexpr const char* kZeroShot = "zero-shot";  // a model's pick, never measured
inline constexpr const char* kDefault = "default";     // the backend's vendor default

struct PlannedTask {
  std::string name;  // first layer it stands for
  Workload workload;
  int weight = 1;  // occurrences in the model
  Schedule schedule;
  double time_us = 0;  // schedule, noise-free (measured again on a real machine)
  std::string provenance = kDefault;
  double default_us = 0;              // the vendor default, timed the same way
  std::optional<std::string> layout;  // the conv's layout, where its space has the knob
  // What the check against the default found, in words: the candidate kept, or the default
  // kept over a slower candidate (with both times).
  std::string check;
};

struct PlannedTranspose {
  std::string from_layer, to_layer;  // the consumer's node runs it before its kernel
  std::string from, to;              // layout names
  Workload workload;
  double time_us = 0;
};

struct PlannedNode {
  std::string name, op;
  double start_us = 0, end_us = 0;
  int stream = 0;
};

// The graph run the figure is: knobs, order, streams and memory offsets.
struct PlannedRun {
  Schedule knobs;  // rank_weight, time_weight, affinity_weight, stages, micro_batches (graph_tuning.hpp)
  std::vector<PlannedNode> nodes;   // in start order
  execution::MemoryPlan memory;     // every tensor's offset in the one activation arena
  double default_scheduled_us = 0;  // the vendor default's run under the default knobs
  double unplaced_us = 0;           // transposes whose consumer is no graph node, added serially
};

struct ModelPlan {
  static constexpr int kVersion = 1;
  std::string job, model;
  // sha256 of the ONNX file the job tuned (weights included), so that a runtime can refuse the
  // plan for another file; empty for a zoo model or a job of explicit workloads.
  std::string model_sha256;
  int batch = 1;
  Target target;
  std::vector<PlannedTask> tasks;  // in the TaskSet's order
  std::vector<PlannedTranspose> transposes;
  double fallback_us = 0;         // the nodes not tuned (frontend/fallback.hpp)
  frontend::Graph graph;          // the model's dataflow; empty for a job of explicit workloads
  std::optional<PlannedRun> run;  // nullopt without a graph
  // The one end-to-end figure: the graph run's makespan with the plan's knobs, or without a
  // graph the serial sum (weight x time, transposes, nodes not tuned). default_us: the vendor
  // default's same figure. The plan is never slower than it (plan.hpp).
  double end_to_end_us = 0;
  double default_us = 0;
  std::string meaning;  // what end_to_end_us is, in words
  // The model-level check: empty, or why the plan fell back to the vendor default schedules.
  std::string model_check;

  double throughput() const { return end_to_end_us > 0 ? batch * 1e6 / end_to_end_us : 0; }

  Json to_json() const;
  // bad_input naming the field (and the task or node) when malformed or of another version.
  static ModelPlan from_json(const Json& j);
  // bad_input naming the file when unreadable, truncated or malformed.
  static ModelPlan load(const std::string& path);
};

}  // namespace atvoss::plan
