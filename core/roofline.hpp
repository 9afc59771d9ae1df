// The roofline floor: the time no schedule of a workload can beat on a target, max(FLOPs /
// peak, compulsory bytes / HBM bandwidth) plus one launch. The simulator clamps jittered
// repeats to it (simulator::physics_floor) and the cost model's est_roofline_fraction is
// measured against it (costmodel/features.cpp), so both read this one definition.
#pragma once

#include <algorithm>

#include "core/target.hpp"
#include "core/workload.hpp"

namespace atvoss {

// Rates below 1 (a target file's missing figure) count as 1 rather than dividing by zero.
inline double roofline_floor_us(const Workload& w, const Target& t) {
  const double compute_s = w.flops() / std::max(1.0, t.peak_flops(w.dtype()));
  const double bytes_s = w.compulsory_bytes() / std::max(1.0, t.hbm_bytes_per_second());
  return std::max(compute_s, bytes_s) * 1e6 + t.launch_us;
}

}  // namespace atvoss
