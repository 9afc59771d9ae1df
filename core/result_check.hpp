// Result check: whether a Measurement could be a real run's result. Everything that takes
// a result from outside this process (imports, the farm's answers) goes through
// Measurement::from_json, which applies it; records built elsewhere in memory (a Kernel
// Tuner cache) are checked by the import itself.
#pragma once

#include "core/measurement.hpp"

namespace atvoss {

// The times a kernel can physically take, in microseconds: no launch completes in under a
// nanosecond, and nothing atvoss times runs for 11 days. An imported 1e-300 became a task's
// best; a table's -1e308 its runtime choice.
inline constexpr double kMinTimeUs = 1e-3;
inline constexpr double kMaxTimeUs = 1e12;
inline bool plausible_time_us(double t) { return t >= kMinTimeUs && t <= kMaxTimeUs; }  // false for NaN

// bad_input naming the field unless every repeat is a plausible time (plausible_time_us),
// and an ok time is one too and lies between the smallest and the largest repeat (it is
// their median here, their mean in Kernel Tuner caches). A result without repeats passes on
// its time.
void check_result(const Measurement& m);

}  // namespace atvoss
