// ExecGraph: the model's graph as a runtime runs it on one device — one node per kernel
// launch group, one buffer per tensor that reaches device memory. Built from the frontend's
// graph (frontend/graph.hpp): a node with a kernel of its own, or not tuned, runs; a node
// fused into another's kernel runs inside it (its other inputs are read by that kernel, its
// output is written by it, and the tensor between them never reaches memory); a view moves
// no data (its output is its input's buffer); constants (weights) are not buffers here:
// the device memory fit counts them (frontend/device_memory.hpp).
// What each node costs (time, launch part, cores and which unit) comes from the caller,
// which knows the chosen schedules (report/job_report.hpp).
// Plain value type; not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "frontend/graph.hpp"

namespace atvoss::execution {

// What a node runs on. Compute: on a coupled chip (one cube and one vector unit per core)
// cube and vector share one pool of cores; on a split chip (AIC + AIV) they are separate pools.
// Engines: copy (DMA between host and device memory) and communication (collectives and
// transfers to other devices, distributed/) are pools of their own, so a copy or a collective
// overlaps compute wherever the dependencies allow. cores counts engines for these.
enum class Unit { cube, vector, copy, comm };

struct NodeCost {
  double time_us = 0;    // the kernel's measured time, launches included (what a serial run pays)
  double launch_us = 0;  // the launch part of time_us (kernels x the target's launch cost)
  int cores = 1;         // cores it spreads over
  Unit unit = Unit::vector;
  int device = 0;        // where it runs, on a graph over many devices (distributed/); >= 0
  double hbm_bytes = 0;  // bytes it moves to and from HBM (its share under contention, scheduler.hpp)
  // Re-reads the device's L2 serves while the kernel has it to itself, and the reuse distance
  // they need (core/cache_reuse.hpp): kernels side by side share the L2 (scheduler.hpp).
  double l2_hit_bytes = 0;
  double l2_distance_bytes = 0;
  // The time the kernel holds its cores: its time without the launch, which the host pays.
  double device_us() const { return time_us > launch_us ? time_us - launch_us : 0; }
  // The kernel doing `work` of its work (a micro-batch's 1/m, a tensor-parallel rank's 1/t) at
  // `speed`: device time x work / speed, HBM bytes x work, the launch paid in full.
  NodeCost share(double work, double speed = 1) const {
    NodeCost c = *this;
    c.time_us = launch_us + device_us() * work / speed;
    c.hbm_bytes = hbm_bytes * work;
    c.l2_hit_bytes = l2_hit_bytes * work;
    return c;
  }
};

struct ExecBuffer {
  std::string name;  // the tensor's name
  std::int64_t bytes = 0;
  int producer = -1;           // exec node; -1: a graph input
  std::vector<int> consumers;  // exec nodes, in order
  bool output = false;         // a graph output: lives to the end of the run
};

// Which layer of a training step a kernel belongs to: its role (frontend::TrainingRole), and
// the frontend graph node of the layer's forward kernel (layer; -1: none, as for a hand-made
// node, a graph input's gradient or a collective of no layer). A plan that splits a kernel
// or adds its collectives gives them the kernel's tag.
struct TrainingTag {
  frontend::TrainingRole role = frontend::TrainingRole::forward;
  int layer = -1;
};

struct ExecNode {
  std::string name;  // the graph node whose kernel it is
  std::string op;
  NodeCost cost;
  std::vector<int> reads, writes;  // buffers
  std::vector<int> preds, succs;   // exec nodes, each once
  TrainingTag training;
};

class ExecGraph {
 public:
  // cost(i) is asked for each graph node i that runs a kernel (its own, or as not tuned).
  static ExecGraph from_graph(const frontend::Graph& g, const std::function<NodeCost(int node)>& cost);

  // For hand-made graphs (tests, benchmarks): nodes in a topological order.
  int add_buffer(std::string name, std::int64_t bytes, bool output = false);
  int add_node(std::string name, std::string op, NodeCost cost, const std::vector<int>& reads,
               const std::vector<int>& writes, TrainingTag training = {});

  const std::vector<ExecNode>& nodes() const { return nodes_; }
  const std::vector<ExecBuffer>& buffers() const { return buffers_; }
  // The serial run: every kernel after the one before, each paying its launch.
  double serial_us() const;

 private:
  std::vector<ExecNode> nodes_;
  std::vector<ExecBuffer> buffers_;
};

}  // namespace atvoss::execution
