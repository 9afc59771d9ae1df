// Transfer model: how the hardware moves a plan's bytes — what one GM copy costs and
// how much of a kernel's operand traffic the chip's L2 absorbs. Used by the simulator
// to turn the bytes of a KernelPlan (lowering/kernel_plan.hpp) into cycles on the
// MTE2 queue and bytes on HBM. Calibration: docs/calibration.md.
// Pure functions: thread-safe.
#pragma once

#include <span>

#include "core/target.hpp"
#include "lowering/kernel_plan.hpp"

namespace atvoss::simulator {

// Fraction of the per-core MTE2 bandwidth one copy reaches (docs/calibration.md:
// full bandwidth from 512 B-aligned rows and >= 16 KB per copy; a 32 B-aligned
// copy loses up to ~30%). segment_bytes: length of each contiguous row of the copy.
double copy_efficiency(double copy_bytes, double segment_bytes);

// Cycles the MTE2 queue is busy for one load made of back-to-back copies, at
// cycles_per_byte (the core's share of the path). The first copy pays the full
// start cost; a later copy hides its start behind the previous transfer.
double load_cycles(const Target& t, std::span<const lowering::Copy> copies, double cycles_per_byte);

struct ReuseResult {
  double l2_read_bytes = 0;   // every operand byte MTE2 fetches from GM (served by L2 or HBM)
  double hbm_read_bytes = 0;  // the part that misses L2
};

// LRU-style estimate over the plan's operand reuse (core/cache_reuse.hpp): a re-read
// hits L2 when the bytes touched since the last use (its reuse distance) fit.
ReuseResult operand_reuse(const Target& t, const lowering::KernelPlan& plan);

// Fraction of re-reads at reuse distance `distance_bytes` served by L2.
double l2_hit_fraction(const Target& t, double distance_bytes);

}  // namespace atvoss::simulator
