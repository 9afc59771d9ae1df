// Pipeline parallelism over a training step: the layers split into stages, stage s on device s,
// and the batch run as micro-batches that flow through the stages, as GPipe (Huang et al.,
// 2019: every forward, then every backward) or 1F1B (PipeDream-Flush, Narayanan et al., 2021:
// after S-s-1 warm-up forwards, stage s alternates one forward and one backward, so it holds
// at most S-s micro-batches' activations). Both flush at the end of the step: each stage's
// optimizer updates run after its last backward, on the gradients accumulated over the
// micro-batches.
// Placement (place_stages): the forward layers in graph order are cut into runs of consecutive
// layers; a layer weighs its forward kernels plus their backward and update kernels. Among
// the cuts whose slowest stage is within 2 % of the best possible, the one with the fewest
// bytes crossing stages wins (dynamic programming, exact for consecutive runs).
// Backward kernels belong to the layer their training tag names (training_roles.hpp; a sum
// of gradients belongs to the layer that produced the tensor).
// The step is unrolled like execution/pipeline.hpp (a micro-batch's kernel takes 1/m of the
// batch's device time, its launch in full); a tensor consumed on another stage is sent there
// by a send on the producer's communication engine, timed on the topology's links
// (collectives.hpp). Each stage runs its micro-batch phases in its schedule's order.
// Pure functions.
#pragma once

#include <string>
#include <vector>

#include "core/json.hpp"
#include "distributed/topology.hpp"
#include "execution/exec_graph.hpp"
#include "execution/scheduler.hpp"

namespace atvoss::distributed {

enum class PipelineOrder { gpipe, one_f_one_b };

struct PipelineOptions {
  int stages = 4;  // devices 0..stages-1 of the topology
  int micro_batches = 8;
  PipelineOrder order = PipelineOrder::one_f_one_b;
  int stride = 1;  // stage s runs on topology device s x stride (its graph device is s)
};

struct StagePlacement {
  std::vector<int> stage_of_node;  // per node of the step
  std::vector<double> stage_us;    // device time per stage (forward, backward and updates)
  double crossing_bytes = 0;       // forward tensors that cross a stage boundary
  double imbalance() const;        // slowest stage over the mean, >= 1
};

struct PipelineStep {
  StagePlacement placement;
  execution::ExecGraph graph;  // unrolled over micro-batches, nodes placed on their stage's device
  execution::Timeline timeline;
  double single_us = 0;  // the step on one device
  double step_us = 0;
  double bubble() const;  // the share of stage time idle: 1 - sum(stage_us) / (stages x step_us)
  Json to_json() const;
};

// The step's forward layers: the most stages it can be cut into.
int forward_layers(const execution::ExecGraph& step);

// bad_input when stages is outside 1..forward_layers(step).
StagePlacement place_stages(const execution::ExecGraph& step, int stages);

// The unrolled step and its placement, not simulated (a plan adds more before it runs:
// parallel_plan.hpp). bad_input when stages x stride exceeds the topology's devices, or
// micro_batches < 1.
struct PipelineGraph {
  StagePlacement placement;
  execution::ExecGraph graph;
};
PipelineGraph with_pipeline(const execution::ExecGraph& step, const Topology& topology, const PipelineOptions& options);

// with_pipeline, simulated, and the step on one device.
PipelineStep pipeline_parallel(const execution::ExecGraph& step, const execution::Device& device,
                               const execution::SchedulerOptions& scheduler, const Topology& topology,
                               const PipelineOptions& options);

std::string to_string(PipelineOrder o);  // "gpipe", "1f1b"
PipelineOrder parse_pipeline_order(const std::string& s);

}  // namespace atvoss::distributed
