// Memory per device: where a graph runs on several devices (a pipeline's stages), each device
// has an arena of its own. A buffer lives on the device of its producer (a graph input: of
// its first consumer; a transfer's result is written on the receiver by the send, and is
// placed with the consumer that reads it); each device's buffers are planned apart
// (execution/memory_plan.hpp), so the figures are the planner's peak and liveness bound per
// device. Weights are not buffers of the graph: per_device_weights adds each device's share.
// Pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "execution/exec_graph.hpp"
#include "execution/memory_plan.hpp"
#include "execution/scheduler.hpp"

namespace atvoss::distributed {

// One plan per device 0..t.devices-1.
std::vector<execution::MemoryPlan> memory_per_device(const execution::ExecGraph& g, const execution::Timeline& t);

}  // namespace atvoss::distributed
