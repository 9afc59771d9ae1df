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
// layer standing for n occurrences costs n times its kernel. A layout transpose (the variant's
// layout_changes) runs in its consumer's node, before the kernel: its time is added to that
// node's; one whose consumer names no graph node is added to the run's figures serially. Not in
// the graph run: the quantize/dequantize kernels precision adds. Threading: the caller's thread.
#pragma once

#include "core/json.hpp"
#include "core/target.hpp"
#include "execution/exec_graph.hpp"
#include "execution/memory_plan.hpp"
#include "execution/pipeline.hpp"
#include "execution/scheduler.hpp"
#include "frontend/device_memory.hpp"
#include "frontend/task_set.hpp"
#include "plan/graph_tuning.hpp"
#include "plan/variant.hpp"

namespace atvoss::plan {

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

// The exec graph of tasks' graph with each node costed under variant v, its layout transposes
// in their consumers' nodes.
execution::ExecGraph exec_graph_of(const frontend::TaskSet& tasks, const ModelVariant& v, const Target& target);

// The device a model's graph run simulates: the target's, but one core where its models'
// runtime runs one kernel at a time (BackendTraits::runs_models_serially: this CPU's engine).
// Two cores there had let the plan's check keep a one-thread default beside a branch that
// never runs beside it: Inception v3's 1x7 matmuls then ran at half speed in the engine.
execution::Device model_device(const Target& target);

// The transposes of v whose consumer is no node of tasks' graph: the graph run adds them serially.
double unplaced_transposes_us(const frontend::TaskSet& tasks, const ModelVariant& v);

// One row of the graph run: a run of the model and what it comes to.
struct RunRow {
  std::string name;
  double end_to_end_us = 0, throughput = 0, utilisation = 0;
};

struct GraphRun {
  // vendor default serial, vendor default scheduled, chosen serial, chosen scheduled with the
  // tuned graph knobs and memory plan (the plan's figure), and when recompute makes the model
  // fit its device, a fifth: the chosen recomputing activations.
  std::vector<RunRow> rows;
  double default_scheduled_us = 0;  // rows[1]
  double scheduled_us = 0;          // rows[3]: the chosen schedules' run, the plan's headline
  double unplaced_us = 0;           // transposes added serially (unplaced_transposes_us)
  double topological_us = 0;        // the chosen schedules in graph order, no priority
  double lower_bound_us = 0;        // execution::makespan_lower_bound of the run
  GraphKnobs knobs;
  execution::ExecGraph graph;  // the run's graph (pipelined when the knobs say so)
  execution::Timeline timeline;
  execution::MemoryPlan memory_plan;
  // {peak_bytes, lower_bound_bytes, weight_bytes, capacity_bytes, fits, over_bytes, and when it
  //  does not fit "recompute": {tensors, extra_us, peak_bytes, fits, over_bytes, end_to_end_us}}
  Json memory = nullptr;
  Json summary() const;  // rows, graph_knobs, topological_us, lower_bound_us, critical_path, memory
};

// nullopt when the model has no graph.
std::optional<GraphRun> graph_run(const frontend::TaskSet& tasks, const ModelVariant& vendor_default,
                                  const ModelVariant& chosen, const Target& target, const frontend::MemoryFit& memory);

}  // namespace atvoss::plan
