// Simulator: the NPU performance model — the measuring instrument of atvoss.
// space_for() gives the schedule space of a workload on a target; simulate() runs
// one schedule through the tile-pipeline model and returns a Measurement with a
// profile. Pure functions of their inputs plus the seed: thread-safe.
// Workloads with op "recorded" are served from core/recorded_space.hpp instead.
// The model's parts, one header each: tiling.hpp (per-op templates, knobs,
// validity), pipeline.hpp (event model of one core), transfer.hpp (GM copies,
// L2 reuse), fusion.hpp (epilogue split), noise.hpp (jitter), analysis.hpp
// (bottleneck and hint). docs/calibration.md says how close it lands.
#pragma once

#include <cstdint>

#include "core/measurement.hpp"
#include "core/schedule_space.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"

namespace atvoss::simulator {

struct SimOptions {
  double noise = 0.02;       // sigma of the multiplicative jitter; 0 turns noise (and outliers) off
  int repeat = 1;            // measurements taken; time_us is their median
  std::uint64_t seed = 0;    // jitter seed; same seed + same inputs -> same result
};

// Knobs and validity check for workload on target (CALIBRATION.md section 2).
ScheduleSpace space_for(const Workload& workload, const Target& target);

// A fixed vendor-style default schedule, valid for workload on target; the
// baseline that tuning is compared against.
Schedule default_schedule(const Workload& workload, const Target& target);

// Simulates schedule. A schedule whose buffers do not fit gives status invalid
// with the reason; one that is not a point of space_for(workload, target)
// (missing, extra or off-list knob) is bad input and throws bad_input.
// noise < 0 or repeat < 1 throw bad_input too.
Measurement simulate(const Target& target, const Workload& workload, const Schedule& schedule,
                     const SimOptions& options = {});

// The bound no schedule beats (DESIGN.md), in microseconds:
// max(FLOPs / peak, compulsory GM bytes / HBM bandwidth) + one launch.
double physics_floor(const Target& target, const Workload& workload);

}  // namespace atvoss::simulator
