// TileAnalysis (internal to costmodel/): the analytic description of one schedule that
// the derived features are read from. It follows the knob semantics the simulator
// documents (simulator/tiling.hpp, transfer.hpp, fusion.hpp; CALIBRATION.md section 2):
// implicit-GEMM tiles with k_steps reduction steps per GM load (conv blocks whose
// accumulator overflows L0C run in row groups), async_copy_depth buffers
// per queue, fractal padding, the halo of conv input tiles, L2 reuse of operand panels
// by tile_order, epilogue fusion in chain order, and a roofline over the pipes.
// It never runs the simulator: it is a closed-form estimate, cheap enough to evaluate
// for thousands of candidates per millisecond, and deliberately rough — the learned
// model corrects it; the heuristic model ranks by est_us alone.
// Pure function; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

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

inline constexpr std::size_t kNamedKnobCount = 10;

// The fixed-contract knobs of one schedule (common.md), read in one pass over it; a knob
// the schedule lacks keeps its neutral default and its bit in `present` stays 0.
struct KnobSet {
  std::int64_t tile_m = 16, tile_n = 16, tile_k = 16, tile_h = 16, tile_w = 16, tile_c = 16;
  std::int64_t k_steps = 1, async_copy_depth = 1, tile_order = 0, fusion_level = 0;
  std::uint32_t present = 0;  // bit i: knob i of the order above was in the schedule

  static KnobSet from(const Schedule& schedule);
  std::int64_t value(std::size_t i) const;  // REQUIRES: i < kNamedKnobCount
  bool has(std::size_t i) const { return (present >> i) & 1u; }
};

// The workload- and target-level part of the analysis, built once per workload so that
// analysing each candidate costs no name lookups. REQUIRES: op is not "recorded".
class TilingContext {
 public:
  TilingContext(const Workload& workload, const Target& target);
  ~TilingContext();
  TilingContext(TilingContext&&) noexcept;

  TileAnalysis analyse(const KnobSet& knobs) const;

  struct Dims;
  struct Fusion;

 private:
  Target target_;
  std::unique_ptr<Dims> dims_;
  std::array<std::shared_ptr<const Fusion>, 4> fusion_;  // split per fusion_level 0..3
  int op_ = 0;
  double bytes_ = 2, macs_ = 1;
};

// One-off convenience: TilingContext(workload, target).analyse(KnobSet::from(schedule)).
TileAnalysis analyse_tiling(const Workload& workload, const Target& target,
                            const Schedule& schedule);

}  // namespace atvoss::costmodel
