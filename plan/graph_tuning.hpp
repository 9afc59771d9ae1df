// Graph tuning: the graph run's own knobs — the scheduler's priority weights, the stage split
// and the micro-batch count — searched like a schedule. They form a ScheduleSpace, one of
// the search strategies (search/) proposes points, and the graph simulator (execution/)
// measures each one: its makespan. The default point (critical-path priority, no
// pipelining) is measured first, so the result is never worse than it.
// Knobs: rank_weight, time_weight, affinity_weight (0..4, scheduler.hpp), stages (1, 2, 4),
// micro_batches (1, 2, 4, 8 that divide the batch).
// Deterministic for a seed. Threading: the caller's thread.
#pragma once

#include <cstdint>
#include <string>

#include "core/schedule.hpp"
#include "execution/exec_graph.hpp"
#include "execution/pipeline.hpp"
#include "execution/scheduler.hpp"

namespace atvoss::plan {

struct GraphKnobs {
  execution::SchedulerOptions scheduler;
  int stages = 1;
  int micro_batches = 1;
  double makespan_us = 0;
  int evaluations = 0;
  Schedule point;  // as the space names it
};

struct GraphTuningOptions {
  std::string strategy = "evolutionary";
  int trials = 48;  // points measured, the default's included
  int batch_size = 8;
  std::uint64_t seed = 0;
};

// The knobs a point of the graph space names (rank_weight, time_weight, affinity_weight,
// stages, micro_batches). bad_input naming a knob it lacks.
GraphKnobs knobs_of(const Schedule& point);

// The run of g under knobs (pipelined when stages or micro_batches > 1; micro-batch kernels
// cost what micro_cost says, execution/pipeline.hpp).
execution::ExecGraph graph_under(const execution::ExecGraph& g, const GraphKnobs& knobs,
                                 const execution::MicroBatchCost& micro_cost = {});

GraphKnobs tune_graph_run(const execution::ExecGraph& g, const execution::Device& device, int batch,
                          const GraphTuningOptions& options = {}, const execution::MicroBatchCost& micro_cost = {});

}  // namespace atvoss::plan
