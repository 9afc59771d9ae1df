// ComputeUnit: how a kind of target computes, as far as the built-in lowering templates
// (lowering.hpp) need to know it — the granule a reduction pads to, the block an output tile
// pads to, the cores a kernel spreads over, the register block, and where a GEMM-like block
// lives on chip. The templates are written against this interface; the NPU's matrix unit
// (a cube_m x cube_n x cube_k fractal fed from L0A/L0B into L0C) is the built-in unit, and a
// backend whose targets compute otherwise registers its own for their organisation (the
// CPU's register-blocked micro-kernel: host/cpu_unit.hpp). So the templates hold no branch
// on which kind of machine they plan for.
// Thread-safety: units are immutable; registration and lookup may run from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/schedule_space.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"
#include "lowering/kernel_plan.hpp"

namespace atvoss::lowering {

// The block an output tile is padded to: an edge tile costs a whole one.
struct UnitBlock {
  double rows = 1, cols = 1;
};

// A GEMM-like cache block as the matmul template sees it, for a unit that places it itself.
struct BlockShape {
  double tile_m = 0;    // rows of the block (knob tile_m)
  double tile_k = 0;    // reduction depth of one step, padded to the granule
  double extra_in = 0;  // extra inputs of the fused epilogue, per output element
  double elem_bytes = 4;
  UnitBlock unit;  // what block() gave
};

class ComputeUnit {
 public:
  virtual ~ComputeUnit() = default;
  // Bytes of the K granule a reduction tile is padded to.
  virtual double k_granule_bytes(const Target& t) const = 0;
  // Whether a unit smaller than a knob list's first size also gets tiles of one and two
  // units (a fractal unit: such tiles waste no padding).
  virtual bool adds_unit_tiles() const = 0;
  // The block a tile of w is padded to under s.
  virtual UnitBlock block(const Workload& w, const Target& t, const Schedule& s) const = 0;
  // The cores a kernel spreads over, from the target's `available` (matrix or vector cores).
  virtual int cores(const Schedule& s, int available) const = 0;
  // The register block of the generated code; all 0 where it has none (a matrix unit).
  virtual RegisterBlock registers(const Target& t, const Schedule& s) const = 0;
  // Sets p.footprint (and p.registers) for a GEMM-like block where the unit places it itself
  // (a CPU's register block and cache blocks); false: the template's own buffers apply.
  virtual bool place_block(KernelPlan& p, const BlockShape& b, const Target& t, const Schedule& s) const = 0;
};

// The unit of t's organisation: a registered one, else the NPU's matrix unit for "coupled"
// and "split". internal error naming the organisation when none serves it (a backend that
// was never linked in).
const ComputeUnit& compute_unit(const Target& t);

// Registers the unit of targets of `organisation` for the life of the process. bad_input if
// the organisation already has one ("coupled" and "split" have the built-in unit).
void register_compute_unit(const std::string& organisation, std::shared_ptr<const ComputeUnit> unit);

}  // namespace atvoss::lowering
