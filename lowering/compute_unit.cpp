// Map: the NPU's matrix unit (the built-in ComputeUnit) and the registry of the others.
#include "lowering/compute_unit.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "core/error.hpp"

namespace atvoss::lowering {
namespace {

// The NPU's levels: each buffer role is a buffer of its own, and L2 is the chip's cache.
enum NpuLevel { kL0A, kL0B, kL0C, kL1, kUB, kL2 };

// A fractal cube_m x cube_n x cube_k of fp16 MACs: tiles pad to the fractal, K to cube_k
// fp16 values, a kernel spreads over every core, and L0A/L0B/L0C/L1/UB hold the roles.
class MatrixUnit final : public ComputeUnit {
 public:
  double k_granule_bytes(const Target& t) const override { return 2.0 * std::max(1, t.cube_k); }
  bool adds_unit_tiles() const override { return true; }
  UnitBlock block(const Workload&, const Target& t, const Schedule&) const override {
    return {double(std::max(1, t.cube_m)), double(std::max(1, t.cube_n))};
  }
  int cores(const Schedule&, int available) const override { return available; }
  RegisterBlock registers(const Target&, const Schedule&) const override { return {}; }
  bool place_block(Buffers&, KernelPlan&, const BlockShape&, const Target&, const Schedule&) const override {
    return false;
  }
  // The rate of each buffer is its copy engine's: MTE1 fills L0A/L0B, the fixpipe drains
  // L0C, MTE2 fills L1 and UB from GM; L2's is the chip's.
  MemoryLevels levels(const Target& t) const override {
    MemoryLevels l;
    l.at[kL0A] = {"L0A", double(t.l0a_bytes), t.mte1_a_bytes_per_cycle};
    l.at[kL0B] = {"L0B", double(t.l0b_bytes), t.mte1_b_bytes_per_cycle};
    l.at[kL0C] = {"L0C", double(t.l0c_bytes), t.fixpipe_bytes_per_cycle};
    l.at[kL1] = {"L1", double(t.l1_bytes), t.mte2_bytes_per_cycle};
    l.at[kUB] = {"UB", double(t.ub_bytes), t.mte2_bytes_per_cycle};
    l.at[kL2] = {"L2", double(t.l2_bytes), t.l2_bytes_per_cycle};
    l.count = kL2 + 1;
    return l;
  }
  int level_of(Buffer role) const override {
    static constexpr std::array<int, kBufferRoles> kLevel = {kL0A, kL0B, kL0C, kL1, kUB, kL2};
    return kLevel[std::size_t(role)];
  }
};

// Registrations are prepended and never removed, so a lookup walks the list without a lock:
// the host's plans, thousands per featurised batch, ask on every plan.
struct Registered {
  std::string organisation;
  std::shared_ptr<const ComputeUnit> unit;
  const Registered* next;
};

struct UnitRegistry {
  std::mutex mu;  // serialises registrations
  std::atomic<const Registered*> head{nullptr};
};

UnitRegistry& unit_registry() {
  static UnitRegistry* r = new UnitRegistry;  // never destroyed: see core/op_registry.cpp
  return *r;
}

const Registered* find(const Registered* r, std::string_view organisation) {
  while (r && r->organisation != organisation) r = r->next;
  return r;
}

bool built_in(std::string_view organisation) { return organisation == "coupled" || organisation == "split"; }

}  // namespace

double Buffers::of(Buffer r) const {
  switch (r) {
    case Buffer::operand_a:
      return operand_a;
    case Buffer::operand_b:
      return operand_b;
    case Buffer::accumulator:
      return accumulator;
    case Buffer::staging:
      return staging;
    case Buffer::vector:
      return vector;
    case Buffer::reused_block:
      return reused_block;
  }
  return 0;
}

void hold(KernelPlan& p, const ComputeUnit& unit, const Buffers& f) {
  for (int r = 0; r < kBufferRoles; ++r) {
    const double bytes = f.of(Buffer(r));
    if (bytes > 0) p.footprint.bytes[std::size_t(unit.level_of(Buffer(r)))] += bytes;
  }
}

double held_at(const KernelPlan& p, const Target& t, std::string_view level) {
  const MemoryLevels levels = compute_unit(t).levels(t);
  for (int i = 0; i < levels.count; ++i) {
    if (levels.at[std::size_t(i)].name == level) return p.footprint.bytes[std::size_t(i)];
  }
  throw Error(ErrorKind::internal,
              "lowering: targets of organisation '" + t.organisation + "' have no level '" + std::string(level) + "'");
}

const ComputeUnit& compute_unit(const Target& t) {
  static const MatrixUnit matrix;
  // The NPU organisations, which every plan of the simulator and the search asks for, take no lock.
  if (built_in(t.organisation)) return matrix;
  if (const Registered* r = find(unit_registry().head.load(std::memory_order_acquire), t.organisation)) {
    return *r->unit;  // registrations live as long as the process
  }
  throw Error(ErrorKind::internal, "lowering: no compute unit is registered for targets of organisation '" +
                                       t.organisation + "' (its backend registers one: lowering/compute_unit.hpp)");
}

void register_compute_unit(const std::string& organisation, std::shared_ptr<const ComputeUnit> unit) {
  if (!unit) throw_bad_input("register_compute_unit: organisation '" + organisation + "' needs a unit");
  if (built_in(organisation)) {
    throw_bad_input("register_compute_unit: organisation '" + organisation + "' has the built-in matrix unit");
  }
  UnitRegistry& r = unit_registry();
  std::lock_guard lock(r.mu);
  const Registered* head = r.head.load(std::memory_order_relaxed);
  if (find(head, organisation)) {
    throw_bad_input("register_compute_unit: organisation '" + organisation + "' already has a unit");
  }
  r.head.store(new Registered{organisation, std::move(unit), head}, std::memory_order_release);
}

}  // namespace atvoss::lowering
