// TileAnalysis (internal to costmodel/): the analytic description of one schedule that
// the derived features are read from. It follows the knob semantics the simulator
// documents (simulator/tiling.hpp, transfer.hpp, fusion.hpp; CALIBRATION.md section 2):
// implicit-GEMM tiles with k_steps reduction steps per GM load, async_copy_depth buffers
// per queue, fractal padding, the halo of conv input tiles, L2 reuse of operand panels
// by tile_order, epilogue fusion in chain order, and a roofline over the pipes.
// It never runs the simulator: it is a closed-form estimate, cheap enough to evaluate
// for thousands of candidates per millisecond, and deliberately rough — the learned
// model corrects it; the heuristic model ranks by est_us alone.
// Pure function; thread-safe.
#pragma once

#include "core/schedule.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"

namespace atvoss::costmodel {

struct TileAnalysis {
  // Geometry of the interior tile (bytes per reduction step unless noted).
  double a_tile_bytes = 0, b_tile_bytes = 0, c_tile_bytes = 0;
  double intensity = 0;            // FLOPs per operand byte of one step
  double tiles = 1, waves = 1, tail_efficiency = 1;
  double padding_waste = 0, fractal_waste = 0;
  double k_iters = 1, gm_loads = 1, steps_per_load = 1;
  double halo = 1;                 // input elements read / owned (conv)
  // Buffer occupancy: bytes needed / capacity, buffers in flight included.
  double l0a = 0, l0b = 0, l0c = 0, l1 = 0, ub = 0;
  // Traffic of the whole op.
  double l2_read_bytes = 0, hbm_read_bytes = 0, gm_write_bytes = 0, l1_l0_bytes = 0;
  double traffic_ratio = 1;        // GM bytes / compulsory bytes
  double l2_hit = 0;               // share of operand reads served by L2
  double copy_bytes = 0, copy_efficiency = 1;
  double in_cycles_per_byte = 0;   // a core's share of the GM read path
  // Epilogue.
  double fused_ops = 0, unfused_ops = 0, kernels = 1;
  bool on_chip = false, row_fits = true, overlap = false;
  // Time estimates, microseconds: busiest core per pipe, chip limits, total.
  double mte2_us = 0, mte1_us = 0, compute_us = 0, out_us = 0;
  double core_us = 0, hbm_us = 0, l2_us = 0, peak_us = 0, epilogue_us = 0, est_us = 0;
};

// REQUIRES: workload.op() is not "recorded". Missing knobs take neutral defaults.
TileAnalysis analyse_tiling(const Workload& workload, const Target& target,
                            const Schedule& schedule);

}  // namespace atvoss::costmodel
