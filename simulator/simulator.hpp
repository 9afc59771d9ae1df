// Simulator: the NPU performance model — the measuring instrument of the npu-sim
// backend. simulate() lowers one schedule to its KernelPlan (lowering/) and applies
// the hardware's behaviour to it, returning a Measurement with a profile. All the
// calibration lives here, once. Pure functions of their inputs plus the seed:
// thread-safe. The model's parts, one header each: pipeline.hpp (event model of one
// core), transfer.hpp (GM copies, L2 reuse), noise.hpp (jitter), analysis.hpp
// (bottleneck and hint). docs/calibration.md says how close it lands.
#pragma once

#include <cstdint>

#include "core/measurement.hpp"
#include "core/schedule_space.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"

namespace atvoss::simulator {

struct SimOptions {
  double noise = 0.02;     // sigma of the multiplicative jitter; 0 turns noise (and outliers) off
  int repeat = 1;          // measurements taken; time_us is their median
  std::uint64_t seed = 0;  // jitter seed; same seed + same inputs -> same result
};

// lowering::space_for and lowering::default_schedule, for the simulator's own callers.
ScheduleSpace space_for(const Workload& workload, const Target& target);
Schedule default_schedule(const Workload& workload, const Target& target);

// Simulates schedule. A schedule whose buffers do not fit gives status invalid
// with the reason; one that is not a point of space_for(workload, target)
// (missing, extra or off-list knob) is bad input and throws bad_input.
// noise < 0 or repeat < 1 throw bad_input too.
Measurement simulate(const Target& target, const Workload& workload, const Schedule& schedule,
                     const SimOptions& options = {});

// The bound no schedule beats, in microseconds: core/roofline.hpp's roofline_floor_us. A noisy
// measurement is clamped to it.
double physics_floor(const Target& target, const Workload& workload);

}  // namespace atvoss::simulator
