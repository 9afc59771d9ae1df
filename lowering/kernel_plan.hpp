// KernelPlan: what a compiler knows about the code one schedule produces — the
// hinge between search and measurement (docs/architecture.md). For every distinct
// tile shape (interior and edge tiles) it holds the trip counts (tiles, GM loads per
// tile, reduction steps per load), the bytes each load copies from GM and the row
// length of each copy, the bytes moved L1 -> L0 and the work the matrix and vector
// units do per step, the output path of a tile, and the bytes held at every on-chip
// memory level, buffers in flight included (the levels are the compute unit's). For the whole kernel: operand reuse
// (how often each operand is fetched again and how many bytes are touched in between, set by tile_order), the fused and
// unfused epilogue ops, the kernels launched and the FLOPs. Where the code has one, the register block of its
// micro-kernel (a CPU's: compute_unit.hpp). It holds no hardware behaviour: no copy-efficiency curves, no cache-hit
// models, no calibration constants. simulator/ applies those; costmodel/ featurises the plan.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/op_registry.hpp"
#include "core/schedule_space.hpp"
#include "lowering/epilogue.hpp"

namespace atvoss::lowering {

// One GM copy of a load: its bytes and the length of each contiguous row.
struct Copy {
  double bytes = 0;
  double segment_bytes = 512;
};

// Walk order of output tiles over the cores (knob tile_order).
enum class TileOrder { row_major = 0, column_major = 1, swizzled = 2 };

// The most memory levels a compute unit names (compute_unit.hpp).
inline constexpr int kMaxMemoryLevels = 8;

// On-chip bytes a schedule keeps allocated at each memory level of its target's compute unit
// (ComputeUnit::levels, nearest the compute first), buffers in flight included.
struct Footprint {
  std::array<double, kMaxMemoryLevels> bytes{};
  double peak() const;
};

// The work of every tile of one shape. "Step" is one reduction step fed from L1.
struct TileWork {
  double count = 0;                // tiles of this shape in the kernel
  double loads = 1;                // GM loads per tile (whole number)
  double steps_per_load = 1;       // reduction steps per load (whole number)
  std::array<Copy, 3> copies{};    // GM -> L1/UB copies of one load
  double l0a_bytes = 0;            // per step: L1 -> L0A
  double l0b_bytes = 0;            // per step: L1 -> L0B
  double l0_transfers = 0;         // per step: L1 -> L0 transfers started
  double cube_macs = 0;            // per step: matrix-unit MACs, padded to the fractal
  double vector_bytes = 0;         // per step: bytes the vector unit processes (ops x bytes)
  double out_elems = 0;            // per tile: elements leaving the accumulator (cube ops)
  double epilogue_bytes = 0;       // per tile: fused epilogue work on the vector unit (ops x bytes)
  double workspace_bytes = 0;      // per tile: parked in a GM workspace and read back (split parts)
  bool handover = false;           // per tile: output handed to the next op on chip (fusion level 3)
  double store_bytes = 0;          // per tile: UB -> GM
  double store_segment_bytes = 0;  // contiguous row of that store; 0: the tile's rows are
                                   // whole output rows (only a transpose writes short ones)
  double fix_store_bytes = 0;      // per tile: written to GM straight from the accumulator
  double consumed_bytes = 0;       // per tile: operand bytes read by the compute units

  double load_bytes() const { return copies[0].bytes + copies[1].bytes + copies[2].bytes; }
  double steps() const { return loads * steps_per_load; }
};

// Re-reads of one operand across the tile grid: each of `rereads` later sweeps
// fetches `unique_bytes` again, after `distance_bytes` other bytes were touched.
struct OperandReuse {
  double unique_bytes = 0;
  double rereads = 0;
  double distance_bytes = 0;
};

// An unfused epilogue op: a kernel of its own that round-trips the output through GM.
struct SeparateKernel {
  std::string op;
  double read_bytes = 0;    // all its passes
  double tensor_bytes = 0;  // distinct bytes it reads (output plus extra inputs)
  double write_bytes = 0;
  double vector_bytes = 0;  // ops x bytes
};

// The register block of a CPU micro-kernel (knobs micro_m x micro_n): each reduction step
// issues one vector FMA into each of `accumulators` independent accumulators and `loads`
// vector loads and broadcasts (a row of B vectors, a broadcast per row of A). All 0 where
// the code has no register block (the NPU's matrix unit).
struct RegisterBlock {
  double rows = 0, cols = 0;  // elements
  double accumulators = 0;
  double loads = 0;
};

struct KernelPlan {
  Verdict verdict;
  OpFamily family = OpFamily::matmul;
  bool uses_cube = true;
  bool has_order = false;  // tile_order is a knob of this op
  int cores = 1;           // cores the kernel spreads over (matrix or vector cores)
  int depth = 1;           // async_copy_depth: buffers in flight per queue
  double elem_bytes = 2;   // bytes per element of the op's dtype
  std::vector<TileWork> tiles;
  // Main operands: every byte the tiles fetch from GM (re-reads included), per batch.
  double operand_read_bytes = 0;
  double batch = 1;          // independent tile grids
  double a_sweep_bytes = 0;  // bytes one sweep over the grid loads of A (halos included)
  double b_sweep_bytes = 0;
  OperandReuse a, b;  // per batch
  double grid_m = 1, grid_n = 1;
  double other_reads = 0;  // GM reads outside the operands (residuals, spills, passes)
  double flops = 0;        // of the main op
  double out_bytes = 0;    // the output tensor
  Footprint footprint;
  RegisterBlock registers;  // CPU code only
  FusionSplit fusion;
  std::vector<SeparateKernel> separate;

  double tile_count() const;
  int kernels() const { return 1 + int(separate.size()); }
};

}  // namespace atvoss::lowering
