// The simulator's reading of a simulated Profile (core/analysis.hpp): where the time went,
// which resource bounds the kernel, and what to change in the schedule about it. The npu-sim
// backend's Backend::analyze. Pure functions: thread-safe.
#pragma once

#include <string>

#include "core/analysis.hpp"
#include "core/measurement.hpp"
#include "core/schedule.hpp"

namespace atvoss::simulator {

using atvoss::Analysis;

// REQUIRES: m.ok(). schedule gives the knob values the hint refers to.
Analysis analyze(const Measurement& m, const Schedule& schedule);

}  // namespace atvoss::simulator
