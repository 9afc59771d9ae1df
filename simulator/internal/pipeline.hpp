// Pipeline: the event model of one AI core working through a stream of tiles
// of one shape. Each tile streams `loads` GM->L1/UB copies (MTE2); each load
// feeds `steps_per_load` reduction steps (MTE1 L1->L0, then cube and/or
// vector); the tile ends with its output path (fixpipe, fused epilogue on the
// vector unit, MTE3 to GM). Pipes run in parallel, synchronised by data
// readiness and by buffer slots: `depth` (async_copy_depth) buffers per queue.
// A slot of L1/UB is freed when the compute that reads it is done, so with
// depth 1 transfer and compute serialise, as in Ascend C with one buffer.
// L0C holds one accumulator: the next tile's first MMAD waits for the fixpipe.
//
// Only a few tiles, and a few loads and steps of each, are simulated event by
// event; once the pipes reach steady state the rest is extrapolated, so the
// cost of simulate_stream does not grow with tile or step counts.
// Pure function: thread-safe.
#pragma once

namespace atvoss::simulator {

// Cycles each pipe is busy per unit of work (0 = the stage is absent).
struct StageCosts {
  double loads = 1;           // MTE2 loads per tile (whole number; double: dims reach 2^40)
  double steps_per_load = 1;  // reduction steps fed by one load (whole number)
  double mte2_per_load = 0;   // GM -> L1/UB
  double mte1_per_step = 0;   // L1 -> L0A/L0B
  double cube_per_step = 0;
  double vec_per_step = 0;   // vector-unit main work (vector ops)
  double fix_per_tile = 0;   // L0C -> GM/UB
  double epi_per_tile = 0;   // fused epilogue on the vector unit
  double mte3_per_tile = 0;  // UB -> GM
};

struct StreamResult {
  double first_tile = 0;  // makespan of the first tile from an idle core (fill + drain)
  double period = 0;      // steady-state cycles per further tile
  // Busy cycles per tile on each pipe, for the profile.
  double mte2_busy = 0, mte1_busy = 0, cube_busy = 0, vec_busy = 0, out_busy = 0;
};

// REQUIRES: depth >= 1, loads >= 1, steps_per_load >= 1.
StreamResult simulate_stream(const StageCosts& costs, int depth);

}  // namespace atvoss::simulator
