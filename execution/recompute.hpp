// Recompute (activation checkpointing, as in Chen et al., "Training Deep Nets with Sublinear
// Memory Cost", 2016): when a run's memory plan does not fit the device, some tensors are not
// kept from their producer to a distant consumer; the producer runs again just before that
// consumer instead, trading its time for the bytes. A training step keeps every forward
// activation until the backward pass needs it, which is where a model runs out of memory.
// The choice is greedy: at the instant of most live bytes, among the tensors live there but
// not used there, drop the one with the most bytes per microsecond of recompute, whose
// producer's inputs stay live until the recompute anyway (so dropping it extends nothing);
// re-simulate, re-plan, repeat until the plan fits or nothing is left to drop.
// The recompute node reads the producer's inputs and the consumer's other inputs, so it
// runs once the consumer's other inputs are ready (in a backward pass: when the gradient
// arrives), not right after the original.
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
  double extra_us = 0;               // makespan over the run without recompute
  bool fits = false;                 // plan.peak_bytes <= budget_bytes
};

// The run of g with as few tensors recomputed as the greedy rule needs for its plan's peak
// to reach budget_bytes (at most max_tensors of them). Unchanged if it fits already.
RecomputeResult recompute_to_fit(const ExecGraph& g, const Device& device, const SchedulerOptions& options,
                                 std::int64_t budget_bytes, int max_tensors = 256);

// g with buffer b dropped after its consumers that start by cut_us: its producer runs again
// (a node named "<producer> (recompute)") before the later consumers, which read the copy.
ExecGraph with_recompute(const ExecGraph& g, const Timeline& t, int b, double cut_us);

}  // namespace atvoss::execution
