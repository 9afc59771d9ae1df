// Fallback timing: how a node that is not tuned still counts in a model's end-to-end
// time, so that no op is dropped and none costs 0 us. The rule is named and plain: the
// node's bytes moved once at the target's DRAM bandwidth, plus one kernel launch, per
// occurrence — what a memory-bound vendor kernel costs at best (docs/job-spec.md,
// "Nodes that are not tuned").
// Also splits off the tasks whose space has no valid schedule on a target, which become
// fallback nodes instead of failing the job.
// Pure functions: thread-safe.
#pragma once

#include <string>

#include "core/json.hpp"
#include "core/target.hpp"
#include "frontend/task_set.hpp"

namespace atvoss::frontend {

inline constexpr const char* kFallbackRule = "bytes at DRAM bandwidth + one launch";

// Time of all the node's occurrences on target, in microseconds (> 0).
double fallback_us(const FallbackNode& node, const Target& target);
// Sum of fallback_us over the set's fallback nodes.
double fallbacks_us(const TaskSet& tasks, const Target& target);

// tasks, with every task whose space has no valid schedule on target turned into
// fallback nodes (one per layer it stood for, the reason naming the target), in layer
// order; the other tasks and fallbacks are kept as they were.
TaskSet without_unschedulable(const TaskSet& tasks, const Target& target);

// The fallback nodes as --json lists them: name, op, reason, count, bytes, time_us.
Json fallbacks_json(const TaskSet& tasks, const Target& target);

}  // namespace atvoss::frontend
