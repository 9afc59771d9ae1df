// TuningLimits: the one set of ranges for the numbers a tuning run takes — trials,
// repeat, batch size, early stopping — shared by the job spec (tuner/job_spec.cpp) and
// single-workload mode (tuner/single_tune.cpp), so a value one path refuses the other
// refuses too. check() names the field (or flag) and the range.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace atvoss::tuner::limits {

struct Range {
  std::int64_t lo, hi;
};

inline constexpr Range trials{1, 100'000'000};
inline constexpr Range repeat{1, 1000};      // a measurement's repeats
inline constexpr Range batch_size{1, 4096};  // schedules per round
inline constexpr Range early_stopping{0, 100'000'000};
inline constexpr Range confirm_top{0, 1000};  // schedules the confirmation re-measures

// bad_input "<field> must be lo..hi, got v" unless lo <= v <= hi.
inline std::int64_t check(const std::string& field, std::int64_t v, Range r) {
  if (v < r.lo || v > r.hi) {
    throw_bad_input(field + " must be " + std::to_string(r.lo) + ".." + std::to_string(r.hi) + ", got " +
                    std::to_string(v));
  }
  return v;
}

}  // namespace atvoss::tuner::limits
