// Transfer model: what one GM copy costs and how much of a kernel's operand
// traffic the chip's L2 absorbs. Used by the simulator to turn the bytes of a
// tiling plan into cycles on the MTE2/MTE3 queues and bytes on HBM.
// Pure functions: thread-safe.
#pragma once

#include <span>

#include "core/target.hpp"

namespace atvoss::simulator {

// Fraction of the per-core MTE2 bandwidth one copy reaches (CALIBRATION.md 1:
// full bandwidth from 512 B-aligned rows and >= 16 KB per copy; a 32 B-aligned
// copy loses up to ~30%). segment_bytes: length of each contiguous row of the copy.
double copy_efficiency(double copy_bytes, double segment_bytes);

// One GM copy of a load: its bytes and the length of each contiguous row.
struct Copy {
  double bytes = 0;
  double segment_bytes = 512;
};

// Cycles the MTE2 queue is busy for one load made of back-to-back copies, at
// cycles_per_byte (the core's share of the path). The first copy pays the full
// start cost; a later copy hides its start behind the previous transfer.
double load_cycles(const Target& t, std::span<const Copy> copies, double cycles_per_byte);

// Walk order of output tiles over the cores (knob tile_order).
enum class TileOrder { row_major = 0, column_major = 1, swizzled = 2 };

// Operand reuse of a 2-D grid of output tiles: operand A is re-read once per
// tile column (grid_n times), operand B once per tile row (grid_m times).
struct ReuseInput {
  double grid_m = 1, grid_n = 1;  // tiles along the A and B reuse axes (per batch)
  double batch = 1;               // independent grids
  double a_unique = 0, a_sweep = 0;  // A: distinct bytes, bytes loaded by one sweep (halo incl.)
  double b_unique = 0, b_sweep = 0;
  TileOrder order = TileOrder::row_major;
};

struct ReuseResult {
  double l2_read_bytes = 0;   // every operand byte MTE2 fetches from GM (served by L2 or HBM)
  double hbm_read_bytes = 0;  // the part that misses L2
};

// LRU-style estimate: a re-read hits L2 when the bytes touched since the last
// use (its reuse distance, set by tile_order) fit; hits fall off linearly to 0
// at twice the L2 size, so the landscape has a slope rather than a cliff.
ReuseResult operand_reuse(const Target& t, const ReuseInput& in);

// Fraction of re-reads at reuse distance `distance_bytes` served by L2.
double l2_hit_fraction(const Target& t, double distance_bytes);

}  // namespace atvoss::simulator
