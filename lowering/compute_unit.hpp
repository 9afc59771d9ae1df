// ComputeUnit: how a kind of target computes, as far as the built-in lowering templates
// (lowering.hpp) need to know it — the granule a reduction pads to, the block an output tile
// pads to, the cores a kernel spreads over, the register block, where a GEMM-like block
// lives on chip, and the memory levels the code keeps its buffers in (a template speaks of
// buffer roles: an operand's, the accumulator's; the unit says at which of its levels each
// role lives, and the plan's footprint is by level). The templates are written against this
// interface; the NPU's matrix unit (a cube_m x cube_n x cube_k fractal fed from L0A/L0B into
// L0C, with L1 and UB beside them) is the built-in unit, and a
// backend whose targets compute otherwise registers its own for their organisation (the
// CPU's register-blocked micro-kernel: host/cpu_unit.hpp). So the templates hold no branch
// on which kind of machine they plan for.
// Thread-safety: units are immutable; registration and lookup may run from many threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/schedule_space.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"
#include "lowering/kernel_plan.hpp"

namespace atvoss::lowering {

// One memory level of a kind of target, nearest the compute first: its name (what a refusal
// names), capacity per core and the bytes per cycle that move data between it and the next
// level out (0 where the target does not state it). DRAM is not a level here: its bandwidth
// is the target's roofline figure (core/roofline.hpp).
struct MemoryLevel {
  const char* name = "";
  double bytes = 0;
  double bytes_per_cycle = 0;
};

// A unit's levels, in a fixed array: the featuriser asks for them on every plan.
struct MemoryLevels {
  std::array<MemoryLevel, kMaxMemoryLevels> at{};
  int count = 0;
};

// The buffers a lowering template allocates, by role. The unit maps each role to a level
// (ComputeUnit::level_of): on the NPU each role is a buffer of its own; on a CPU both
// micro-panels and the epilogue's tile share L1d.
enum class Buffer { operand_a, operand_b, accumulator, staging, vector, reused_block };
inline constexpr int kBufferRoles = 6;

// Bytes a template keeps allocated per role, buffers in flight included.
struct Buffers {
  double operand_a = 0;     // A (input) tile next to the compute
  double operand_b = 0;     // B (weight) tile next to the compute
  double accumulator = 0;   // the output tile being accumulated
  double staging = 0;       // GM loads in flight (and kept output) before they reach the operands
  double vector = 0;        // the vector unit's tiles (epilogue, row ops)
  double reused_block = 0;  // a block every tile of a sweep reads again (a CPU's B panel)
  double of(Buffer r) const;
};

// The block an output tile is padded to: an edge tile costs a whole one.
struct UnitBlock {
  double rows = 1, cols = 1;
};

// A GEMM-like cache block as the matmul template sees it, for a unit that places it itself.
struct BlockShape {
  double tile_m = 0;    // rows of the block (knob tile_m)
  double tile_k = 0;    // reduction depth of one step, padded to the granule
  double tile_n = 0;    // columns of the block (knob tile_n)
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
  // Sets f (and p.registers) for a GEMM-like block where the unit places it itself (a CPU's
  // register block and cache blocks); false: the template's own buffers apply.
  virtual bool place_block(Buffers& f, KernelPlan& p, const BlockShape& b, const Target& t,
                           const Schedule& s) const = 0;
  // The levels of t a plan's buffers live in, nearest the compute first (at most
  // kMaxMemoryLevels), and the level of each role: an index into them.
  virtual MemoryLevels levels(const Target& t) const = 0;
  virtual int level_of(Buffer role) const = 0;
};

// The unit of t's organisation: a registered one, else the NPU's matrix unit for "coupled"
// and "split". internal error naming the organisation when none serves it (a backend that
// was never linked in).
const ComputeUnit& compute_unit(const Target& t);

// Registers the unit of targets of `organisation` for the life of the process. bad_input if
// the organisation already has one ("coupled" and "split" have the built-in unit).
void register_compute_unit(const std::string& organisation, std::shared_ptr<const ComputeUnit> unit);

// The bytes p holds at the level of t's compute unit named `level`; internal error naming
// it if the unit has no such level. For tests and reports: the featuriser reads by position.
double held_at(const KernelPlan& p, const Target& t, std::string_view level);

// Adds f's roles to p's footprint at the levels `unit` keeps them in: how a template, or a
// user op's lowering, states what its plan holds on chip.
void hold(KernelPlan& p, const ComputeUnit& unit, const Buffers& f);

}  // namespace atvoss::lowering
