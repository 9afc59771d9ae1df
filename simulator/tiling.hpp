// Tiling: the per-op templates. knobs_for() gives the knobs of an op's schedule
// space (CALIBRATION.md section 2; names fixed by the project); plan_kernel()
// lowers one schedule to a KernelPlan — the distinct tile shapes (interior and
// edge tiles) with the work each does per load, step and tile, the buffer
// footprint at every on-chip level, the operand reuse the L2 model needs, and
// the fusion split — and judges it: a plan whose buffers do not fit is invalid
// with the reason, e.g. "L0A: 96 KB > 64 KB with async_copy_depth 2".
// Costs here are in bytes and in cycles of on-chip paths; the simulator turns
// bytes into GM cycles once it knows how the cores share the bandwidth.
//
// Templates (M, N, K of the implicit GEMM for conv: M = N*Ho*Wo, N = K, K = C*R*S):
//   matmul/batch_matmul  tile_m x tile_n output block in L0C; K streamed in
//                        tile_k steps, k_steps of them per GM load.
//   conv2d               output block tile_h x tile_w x tile_n; each load brings
//                        the input halo ((tile_h-1)*stride+R rows) for
//                        tile_k*k_steps/(R*S) channels plus the weights; the cube
//                        walks the block in L0-sized M sub-blocks. An accumulator
//                        larger than L0C spills partial sums through GM per load.
//   depthwise_conv2d     vector op: tile_h x tile_w x tile_c output, halo input in UB.
//   elementwise          two inputs, one output, tile_m x tile_n in UB.
//   layernorm/softmax    a tile narrower than the row needs a second pass over GM.
// Pure functions: thread-safe.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/schedule_space.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"
#include "simulator/fusion.hpp"
#include "simulator/transfer.hpp"

namespace atvoss::simulator {

// On-chip bytes a schedule keeps allocated at each level, buffers in flight included.
struct Footprint {
  double l0a = 0, l0b = 0, l0c = 0, l1 = 0, ub = 0;
  double peak() const;
};

// The work of every tile of one shape.
struct TileWork {
  double count = 0;            // tiles of this shape in the kernel
  double loads = 1;            // GM loads per tile (whole number)
  double steps_per_load = 1;   // reduction steps per load (whole number)
  std::array<Copy, 3> copies{};  // GM copies of one load
  double mte1_cycles = 0;      // per step
  double cube_cycles = 0;      // per step
  double vec_cycles = 0;       // per step
  double fix_cycles = 0;       // per tile: L0C out (to GM on fixpipe parts, else to UB)
  double epi_cycles = 0;       // per tile: fused epilogue on the vector unit
  double store_bytes = 0;      // per tile: UB -> GM through MTE3
  double fix_store_bytes = 0;  // per tile: written to GM by the fixpipe itself
  double consumed_bytes = 0;   // per tile: operand bytes read by the compute units

  double load_bytes() const { return copies[0].bytes + copies[1].bytes + copies[2].bytes; }
};

struct KernelPlan {
  Verdict verdict;
  bool uses_cube = true;
  int cores = 1;               // cores the kernel spreads over (AIC or AIV)
  int depth = 1;               // async_copy_depth
  std::vector<TileWork> tiles;
  ReuseInput reuse;            // main operands, for the L2 model
  double other_reads = 0;      // GM reads outside the reuse model (residuals, spills, passes)
  double flops = 0;
  double out_bytes = 0;        // the output tensor
  Footprint footprint;
  FusionSplit fusion;

  double tile_count() const;
};

std::vector<Knob> knobs_for(const Workload& w, const Target& t);

// Lowers schedule; verdict says whether it fits. REQUIRES: every knob of
// knobs_for(w, t) is present (ScheduleSpace::check ensures it).
KernelPlan plan_kernel(const Workload& w, const Target& t, const Schedule& s);

// "96 KB" style sizes for rejection reasons.
std::string format_bytes(double bytes);

}  // namespace atvoss::simulator
