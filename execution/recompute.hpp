// Recompute (activation checkpointing, as in Chen et al., "Training Deep Nets with Sublinear
// Memory Cost", 2016): when a run's memory plan does not fit the device, some tensors are not
// kept from their producer to a distant consumer; the producer runs again just before that
// consumer instead, trading its time for the bytes. A training step keeps every forward
// activation until the backward pass needs it, which is where a model runs out of memory.
// The choice is greedy: at the instant of most live bytes, among the tensors live there but
// not used there, drop the one with the most bytes per microsecond of recompute; re-simulate,
// re-plan, repeat until the plan fits or nothing is left to drop.
// What is recomputed is a chain (Chen et al.'s segment): the tensor's producer and, going back,
// the producer of every input that would be dead by the time the copy is needed, up to
// RecomputeOptions::max_chain nodes, so that dropping it extends no other tensor's life (a
// conv -> bn -> relu block whose inner tensors die at once recomputes all three from the kept
// input). A graph input that is dead by then cannot be made again: that tensor is not dropped.
// The chain's first nodes also read the consumer's other inputs, and wait for the node that
// ended last before the consumer started (in the run without the drop), so the recompute runs
// just in time (in a backward pass: when the gradient arrives and the pass reaches the
// segment), not on the first free core, where its copy would live across the peak again.
// Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "execution/exec_graph.hpp"
#include "execution/memory_plan.hpp"
#include "execution/scheduler.hpp"

namespace atvoss::execution {

struct RecomputeResult {
  ExecGraph graph;  // the run's graph with its recompute nodes
  Timeline timeline;
  MemoryPlan plan;
  std::vector<std::string> tensors;  // recomputed, in the order chosen
  int recomputed_nodes = 0;          // kernels run again for them (a chain per tensor)
  double extra_us = 0;               // makespan over the run without recompute
  bool fits = false;                 // plan.peak_bytes <= budget_bytes
};

struct RecomputeOptions {
  int max_tensors = 256;  // tensors dropped at most
  // Nodes one tensor's recompute may run again. 1: only tensors whose producer's inputs are
  // kept anyway (a single op); 4 covers a conv -> bn -> relu -> pool block whose inner
  // tensors are not fused away (docs/execution.md, recompute).
  int max_chain = 4;
};

// The run of g with as few tensors recomputed as the greedy rule needs for its plan's peak
// to reach budget_bytes. Unchanged if it fits already.
RecomputeResult recompute_to_fit(const ExecGraph& g, const Device& device, const SchedulerOptions& options,
                                 std::int64_t budget_bytes, const RecomputeOptions& limits = {});

// g with buffer b dropped after its consumers that start by cut_us: the chain's nodes (b's
// producer among them, in graph order) run again (nodes named "<node> (recompute)", writing
// "<tensor> (recomputed)") before the later consumers, which read the copy.
ExecGraph with_recompute(const ExecGraph& g, const Timeline& t, int b, double cut_us, const std::vector<int>& chain);

}  // namespace atvoss::execution
