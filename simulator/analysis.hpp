// Analysis: reads a simulated Profile the way a performance engineer would —
// where the time went, which resource bounds the kernel, and what to change in
// the schedule about it. Used by atvoss-analyze and by reports.
// Pure functions: thread-safe.
#pragma once

#include <string>

#include "core/measurement.hpp"
#include "core/schedule.hpp"

namespace atvoss::simulator {

struct Analysis {
  double compute_share = 0, dma_share = 0, sync_share = 0, launch_share = 0;  // of time_us
  std::string bottleneck;  // "compute", "dma", "sync-wait" or "launch"
  std::string hint;        // what to change in the schedule, in words
};

// REQUIRES: m.ok(). schedule gives the knob values the hint refers to.
Analysis analyze(const Measurement& m, const Schedule& schedule);

}  // namespace atvoss::simulator
