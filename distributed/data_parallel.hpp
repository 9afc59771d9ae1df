// Data parallelism over a training step (execution/ on frontend/training.hpp's graph): every
// device runs the whole step on its own micro-batch (weak scaling: the step's batch is per
// device), and the weight gradients are averaged by AllReduce before the optimizer updates.
// The gradients go into buckets in the order the backward pass produces them (each bucket
// closes once it holds bucket_bytes, as PyTorch DDP's bucket_cap_mb, 25 MB by default); each
// bucket's AllReduce is a node on the communication engine of the graph run
// (execution/scheduler.hpp) that starts as soon as its last gradient exists (overlap), or,
// without overlap, once the last gradient of the step exists. A weight's update waits for its
// bucket's AllReduce. The ranks are symmetric, so one device's run stands for all: the
// collective's time (collectives.hpp) already includes waiting for the slowest link.
// Gradients: the buffers the optimizer updates read, and the bias gradients; on a step over
// several devices (a pipeline's stages), each device's gradients go into buckets of its own,
// reduced on its own communication engine among its replicas.
// Not modelled: the HBM bandwidth a collective's DMA takes from concurrent kernels.
// Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/json.hpp"
#include "distributed/collectives.hpp"
#include "distributed/topology.hpp"
#include "execution/exec_graph.hpp"
#include "execution/scheduler.hpp"

namespace atvoss::distributed {

struct DataParallelOptions {
  int devices = 8;  // replicas: devices 0..devices-1 of the topology (with the strides below)
  // Inside a larger plan (parallel_plan.hpp): the step's device d (NodeCost::device) is
  // topology device d x device_stride, and its replicas are that device + r x group_stride.
  int device_stride = 1;
  int group_stride = 1;
  std::int64_t bucket_bytes = 25LL << 20;
  bool overlap = true;
  std::optional<Algorithm> algorithm;  // none: the fastest for each bucket
};

struct GradientBucket {
  std::vector<int> buffers;  // of the training step's graph
  std::int64_t bytes = 0;
  CollectiveTime allreduce;
};

struct DataParallelStep {
  execution::ExecGraph graph;  // the step with its AllReduce nodes
  execution::Timeline timeline;
  std::vector<GradientBucket> buckets;
  double single_us = 0;  // the step on one device, no communication
  double step_us = 0;
  double comm_us = 0;  // the AllReduces' time, summed
  double exposed_comm_us() const { return step_us > single_us ? step_us - single_us : 0; }
  double efficiency() const { return step_us > 0 ? single_us / step_us : 0; }
  Json to_json() const;  // the figures and the buckets (bytes, algorithm, time)
};

// The gradient buffers of a training step, in the order they are produced.
std::vector<int> gradient_buffers(const execution::ExecGraph& step);

// The step with its buckets' AllReduce nodes, not simulated (a plan adds more before it runs:
// parallel_plan.hpp). bad_input when devices is outside 1..topology devices or bucket_bytes < 1,
// and when the step has no gradient (not a training step).
struct DataParallelGraph {
  execution::ExecGraph graph;
  std::vector<GradientBucket> buckets;
};
DataParallelGraph with_data_parallel(const execution::ExecGraph& step, const Topology& topology,
                                     const DataParallelOptions& options);

// with_data_parallel, simulated, and the same step with instant AllReduces (one device).
DataParallelStep data_parallel(const execution::ExecGraph& step, const execution::Device& device,
                               const execution::SchedulerOptions& scheduler, const Topology& topology,
                               const DataParallelOptions& options);

}  // namespace atvoss::distributed
