// Graph run: the model's graph run on its device (execution/) under the schedules of a
// report variant, next to the serial sum of the same kernels. Four rows, as the articles'
// ResNet-50 comparison: the vendor default serial, the default with the ready-queue
// scheduler, the chosen schedules serial, and the chosen schedules with the scheduler under
// its tuned knobs (priority weights, stages and micro-batches: graph_tuning.hpp) and the
// memory plan of that run; plus the chosen schedules in plain graph order (the baseline).
// Each node's cost: its task's time in the variant (noise-free), the launch part (kernels x
// the target's launch cost), and the cores and unit of its kernel plan (as many cores as it
// has tiles, up to the unit's); a node not tuned costs its fallback time on every vector core.
// Each node also carries the HBM bytes its kernel cannot avoid, so that kernels running side
// by side share the HBM bandwidth (execution/scheduler.hpp); L2 is not shared that way. A zoo
// layer standing for n occurrences costs n times its kernel. Not in the graph run: layout transposes and the
// quantize/dequantize kernels precision adds (they are no nodes of the model's graph). Threading: the caller's thread.
#pragma once

#include "core/json.hpp"
#include "core/target.hpp"
#include "execution/exec_graph.hpp"
#include "execution/memory_plan.hpp"
#include "execution/pipeline.hpp"
#include "frontend/device_memory.hpp"
#include "frontend/task_set.hpp"
#include "report/html_report.hpp"

namespace atvoss::report {

// What graph node n costs on target: with a kernel and a schedule, that kernel's cores and
// unit under it with time_us measured; otherwise its fallback time on every vector core.
// Times and launches count its occurrences.
execution::NodeCost node_cost(const frontend::GraphNode& n, const Target& target, const Schedule* schedule,
                              double time_us);

// Every task at the backend's default schedule, timed noise-free: the costs of a graph run
// before any tuning (the articles' "fixed vendor default" row).
ModelVariant vendor_default_variant(const frontend::TaskSet& tasks, const Target& target);

// The cost of each node of exec_graph_of(tasks, v) at 1/m of its batch: its kernel simulated
// at the smaller batch (frontend/micro_batch.hpp) under v's schedule where that stays valid,
// else the default; nullopt where the batch does not split (the pipeline then scales it).
// Holds references to its arguments, which must outlive it.
execution::MicroBatchCost micro_batch_cost(const frontend::TaskSet& tasks, const ModelVariant& v,
                                           const execution::ExecGraph& g, const Target& target);

// The exec graph of tasks' graph with each node costed under variant v.
execution::ExecGraph exec_graph_of(const frontend::TaskSet& tasks, const ModelVariant& v, const Target& target);

struct GraphRun {
  // {"rows": [{name, end_to_end_us, throughput, utilisation}], "graph_knobs": {point,
  //  evaluations, stages, micro_batches}, "topological_us",
  //  "critical_path" (node names), "memory": {peak_bytes, lower_bound_bytes, weight_bytes,
  //  capacity_bytes, fits, over_bytes, and when it does not fit "recompute": {tensors,
  //  extra_us, peak_bytes, fits, over_bytes, end_to_end_us} (execution/recompute.hpp)}};
  //  a fifth row when recompute makes it fit. Null when the model has no graph.
  Json summary;
  execution::MemoryPlan plan;  // of the chosen schedules, scheduled
  GraphView view;              // for the HTML report
};

GraphRun graph_run(const frontend::TaskSet& tasks, const ModelVariant& vendor_default, const ModelVariant& chosen,
                   const Target& target, const frontend::MemoryFit& memory);

}  // namespace atvoss::report
