// Memory plan: where each buffer of an ExecGraph lives in one arena of device memory, given
// when it is live (its timeline, scheduler.hpp). A buffer is live from its producer's start
// (a graph input: from 0) to its last consumer's end (a graph output: to the end of the run),
// half-open, so a buffer freed at t and one allocated at t may share bytes. Offsets come from
// greedy by size, the algorithm of TFLite's arena planner (Pisarchyk and Lee, "Efficient
// Memory Management for Deep Neural Net Inference", 2020): the largest buffer first, each at
// the smallest gap where it overlaps no placed buffer that is live at the same time; other
// orders (by bytes x lifetime, by birth) and a seeded hill climb over the order keep the
// lowest peak (memory_plan.cpp says why).
// The liveness lower bound is the largest sum of live bytes at any instant: no plan can peak
// below it. check_plan() verifies that no two buffers live at once share bytes; it runs in
// tests and as `atvoss-analyze --check-plan FILE`.
// Pure functions; the plan is a plain value type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "execution/exec_graph.hpp"
#include "execution/scheduler.hpp"

namespace atvoss::execution {

struct Allocation {
  std::string tensor;
  std::int64_t offset = 0;
  std::int64_t bytes = 0;
  double start_us = 0, end_us = 0;  // live in [start_us, end_us)
};

struct MemoryPlan {
  std::vector<Allocation> allocations;
  std::int64_t peak_bytes = 0;         // the arena: the highest offset + bytes
  std::int64_t lower_bound_bytes = 0;  // the liveness lower bound
  Json to_json() const;
  // bad_input naming the field on a malformed plan (what --check-plan reads).
  static MemoryPlan from_json(const Json& j);
};

// Offsets are multiples of alignment (bytes >= 1).
MemoryPlan plan_memory(const ExecGraph& g, const Timeline& t, std::int64_t alignment = 64);
// The same for buffers whose lifetimes are given (their offsets are ignored and set).
MemoryPlan plan_allocations(std::vector<Allocation> lifetimes, std::int64_t alignment = 64);

// The bytes live over time: (time, bytes live from then on), one step per instant at which
// a buffer is born or dies.
std::vector<std::pair<double, std::int64_t>> live_bytes(const std::vector<Allocation>& allocations);

// The largest sum of bytes live at one instant, and the first instant it is reached.
struct LivePeak {
  double at_us = 0;
  std::int64_t bytes = 0;
};
LivePeak live_peak(const std::vector<Allocation>& allocations);
std::int64_t liveness_bound(const std::vector<Allocation>& allocations);  // live_peak().bytes

// One line per pair of buffers live at the same time whose bytes overlap, and per
// allocation with a negative offset or size; empty when the plan is sound.
std::vector<std::string> check_plan(const MemoryPlan& plan);

}  // namespace atvoss::execution
