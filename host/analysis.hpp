// The host backend's reading of a measurement (core/analysis.hpp). A CPU's profile has no
// breakdown and no hardware counters: its one figure of how well the machine was used is the
// achieved FLOP/s over the peak of the schedule's threads (Profile::cube_utilisation,
// docs/host-backend.md), so the bottleneck is an inference from that number (docs/profiler.md
// "CPU targets"). Pure functions: thread-safe.
#pragma once

#include "core/analysis.hpp"
#include "core/measurement.hpp"
#include "core/schedule.hpp"

namespace atvoss::host {

// At or above this share of its threads' peak FLOP/s a kernel is compute-bound: tuned GEMMs
// reach 0.7-0.94, element-wise ops a few percent (a judgement, docs/profiler.md).
inline constexpr double kComputeBound = 0.5;
// Repeats varying more than this (coefficient of variation) make the hint warn of a busy
// machine; the runner already re-measures above it, so this flags what stayed noisy.
inline constexpr double kNoisyCv = 0.05;

// "compute" or "memory", with what to try. REQUIRES: m.ok().
Analysis analyze_cpu(const Measurement& m, const Schedule& schedule);

}  // namespace atvoss::host
