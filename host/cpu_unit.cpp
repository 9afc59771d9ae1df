// Map: the CPU's ComputeUnit (cpu_unit.hpp) and its registration.
#include "host/cpu_unit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "lowering/compute_unit.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

using lowering::BlockShape;
using lowering::KernelPlan;
using lowering::RegisterBlock;
using lowering::UnitBlock;

// The CPU's levels, nearest the compute first.
enum CpuLevel { kRegisters, kL1d, kL2, kL3 };

// A row of an operand is read in 32-byte granules: an AVX2 vector.
constexpr double kVectorGranuleBytes = 32;

// The register block micro_m x micro_n of the schedule; none without the knobs (row ops).
std::optional<UnitBlock> register_block(const Schedule& s) {
  const std::string mk(knobs::micro_m), nk(knobs::micro_n);
  if (!s.has(mk) || !s.has(nk)) return std::nullopt;
  return UnitBlock{double(std::max<std::int64_t>(1, s.at(mk))), double(std::max<std::int64_t>(1, s.at(nk)))};
}

class CpuUnit final : public lowering::ComputeUnit {
 public:
  double k_granule_bytes(const Target&) const override { return kVectorGranuleBytes; }
  // The host's tile lists are its own (host_space.hpp); the shared lists need no unit tiles.
  bool adds_unit_tiles() const override { return false; }
  // A matmul's tiles pad to its register block; other ops' to the fp32 lanes (cube_m) by one.
  UnitBlock block(const Workload& w, const Target& t, const Schedule& s) const override {
    if (const auto r = register_block(s); r && w.family() == OpFamily::matmul) return *r;
    return {double(std::max(1, t.cube_m)), double(std::max(1, t.cube_n))};
  }
  int cores(const Schedule& s, int available) const override {
    const std::string threads(knobs::threads);
    return s.has(threads) ? int(std::clamp<std::int64_t>(s.at(threads), 1, available)) : available;
  }
  // Each reduction step loads a row of micro_n / lanes vectors and broadcasts one value per
  // row (matmul and conv2d alike; depthwise runs on the vector term, which has no issue model).
  RegisterBlock registers(const Target& t, const Schedule& s) const override {
    const auto r = register_block(s);
    if (!r) return {};
    const double vectors = std::ceil(r->cols / std::max(1, t.cube_m));
    return {r->rows, r->cols, r->rows * vectors, vectors + r->rows};
  }
  // BLIS's placement: the register block's accumulators in registers, both micro-panels and
  // the epilogue's tile in L1d, the A block in L2, the B panel (tile_k x tile_n) in L3.
  bool place_block(lowering::Buffers& f, KernelPlan& p, const BlockShape& b, const Target& t,
                   const Schedule& s) const override {
    if (!register_block(s)) return false;  // the matmul's block is then the register block
    const double mr = b.unit.rows, nr = b.unit.cols, e = b.elem_bytes;
    f.operand_a = mr * b.tile_k * e;
    f.operand_b = b.tile_k * nr * e;
    f.accumulator = mr * nr * 4;
    f.staging = std::ceil(b.tile_m / mr) * mr * b.tile_k * e;
    if (!p.fusion.fused.empty()) f.vector = mr * nr * (4 + b.extra_in * e);
    f.reused_block = b.tile_k * b.tile_n * e;
    p.registers = registers(t, s);
    return true;
  }
  // The host target's fields hold the caches (host/machine.hpp): l0c_bytes the vector
  // registers, l0a_bytes L1d, l1_bytes L2, l2_bytes L3. Registers are fed at two vector
  // loads a cycle; L3 from DRAM at the measured bandwidth; L1d and L2 are not stated.
  lowering::MemoryLevels levels(const Target& t) const override {
    lowering::MemoryLevels l;
    l.at[kRegisters] = {"registers", double(t.l0c_bytes), t.mte1_a_bytes_per_cycle};
    l.at[kL1d] = {"L1d", double(t.l0a_bytes), 0};
    l.at[kL2] = {"L2", double(t.l1_bytes), 0};
    l.at[kL3] = {"L3", double(t.l2_bytes), t.hbm_bytes_per_cycle};
    l.count = kL3 + 1;
    return l;
  }
  int level_of(lowering::Buffer role) const override {
    static constexpr std::array<int, lowering::kBufferRoles> kLevel = {kL1d, kL1d, kRegisters, kL2, kL1d, kL3};
    return kLevel[std::size_t(role)];
  }
};

}  // namespace

void register_cpu_unit() {
  static std::once_flag once;
  std::call_once(once, [] { lowering::register_compute_unit("cpu", std::make_shared<CpuUnit>()); });
}

// At start-up in every program that links this file: machine.cpp, which makes and checks host
// targets, calls register_cpu_unit(), so a program that can hold a host target has the unit
// before it lowers anything, a target read back from a database included.
const bool kRegisteredAtStart = (register_cpu_unit(), true);

}  // namespace atvoss::host
