// Parallel plan: how a training step is spread over n devices — tp-way tensor parallelism
// inside a server (tensor_parallel.hpp), pp pipeline stages (pipeline_parallel.hpp) and dp
// data-parallel replicas (data_parallel.hpp), tp x pp x dp = n, as Megatron-LM's 3-D
// parallelism lays them out: the tp ranks of a group are neighbouring cards, the stages
// follow, the replicas outermost (a step without gradients, an inference, has replicas that
// never synchronise). run_plan simulates one step of a plan (each replica runs
// `batch` samples, in micro_batches when pipelined); search_plan searches the plans with one
// of the search strategies (search/minimise.hpp), the simulator as the measure, the time per
// replica batch as the objective, pure data parallelism measured first (so the plan found is
// never slower than it). With a device capacity, a plan that does not fit recomputes
// activations (fit_by_recompute) and is skipped if it still does not, except pure data
// parallelism, which is reported either way.
// Knobs: tp, pp in {1, 2, 4, 8} (tp within a server), micro_batches in {1, 2, 4, 8},
// order (gpipe, 1f1b), bucket_mib in {1, 4, 25, 100}, overlap_chunks in {1, 4}, and per group
// of consecutive splittable matmuls (up to 8 groups) whether tensor parallelism splits it.
// Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "distributed/pipeline_parallel.hpp"
#include "distributed/topology.hpp"
#include "execution/exec_graph.hpp"
#include "execution/scheduler.hpp"

namespace atvoss::distributed {

struct ParallelPlan {
  int tp = 1, pp = 1, dp = 1;
  int micro_batches = 1;
  PipelineOrder order = PipelineOrder::one_f_one_b;
  std::int64_t bucket_bytes = 25LL << 20;
  int overlap_chunks = 1;  // tensor parallelism: MatMul + collective fusion (tensor_parallel.hpp)
  // With tp > 1: the matmuls split (step node indices; FlexFlow-style per-op choice, the
  // others run whole on every rank); nullopt: every splittable matmul.
  std::optional<std::vector<int>> split;
  int devices() const { return tp * pp * dp; }
  Json to_json() const;
};

struct PlanRun {
  ParallelPlan plan;
  execution::ExecGraph graph;  // one replica's step: its stages on devices 0..pp-1 (tp rank 0)
  execution::Timeline timeline;
  double step_us = 0;
  // The largest device's memory plan peak: activations, gradients and transfers in flight
  // (device_memory.hpp); weights are not in it.
  std::int64_t device_peak_bytes() const;
  double us_per_batch() const { return step_us / plan.dp; }  // a step runs dp replica batches
  // What the largest device needs: device_peak_bytes() plus its share (1 / (tp x pp)) of the
  // model's fp16 weights with mixed-precision Adam's state — an fp32 master copy and two fp32
  // moments, 16 bytes per parameter in all (Rajbhandari et al., "ZeRO", 2020).
  double device_need_bytes(double weight_bytes) const;
  double weight_state_bytes(double weight_bytes) const;  // the second term of device_need_bytes
  std::vector<std::string> recomputed;                   // activations run again to fit (fit_by_recompute)
};

// A one-stage plan over the device's capacity, fitted by recomputing activations
// (execution/recompute.hpp) within what the weights and their optimizer state leave; the run
// unchanged when it fits already, has stages (recompute runs on one device), or nothing
// recomputed makes it fit (its recomputed list then says what was tried). Returns whether it fits.
bool fit_by_recompute(PlanRun& run, const execution::Device& device, double weight_bytes, double capacity_bytes);

// bad_input naming the field when the plan does not fit the topology (tp beyond a server, or
// more devices than it has).
PlanRun run_plan(const execution::ExecGraph& step, const execution::Device& device, const Topology& topology,
                 const ParallelPlan& plan);

struct PlanSearchOptions {
  int devices = 8;
  std::string strategy = "evolutionary";
  int trials = 64;
  std::uint64_t seed = 0;
  // With a capacity: plans whose device_need_bytes(weight_bytes) exceeds it are not run.
  double weight_bytes = 0;
  double capacity_bytes = 0;  // 0: no limit
};

struct PlanSearch {
  PlanRun best;
  PlanRun data_parallel;  // tp = pp = 1, dp = devices, 25 MiB buckets
  int evaluations = 0;
  double search_ms = 0;  // wall time of the search
  Json to_json() const;
};

PlanSearch search_plan(const execution::ExecGraph& step, const execution::Device& device, const Topology& topology,
                       const PlanSearchOptions& options);

}  // namespace atvoss::distributed
