// Map: the NPU's matrix unit (the built-in ComputeUnit) and the registry of the others.
#include "lowering/compute_unit.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "core/error.hpp"

namespace atvoss::lowering {
namespace {

// A fractal cube_m x cube_n x cube_k of fp16 MACs: tiles pad to the fractal, K to cube_k
// fp16 values, a kernel spreads over every core, and L0A/L0B/L0C/L1/UB are the template's.
class MatrixUnit final : public ComputeUnit {
 public:
  double k_granule_bytes(const Target& t) const override { return 2.0 * std::max(1, t.cube_k); }
  bool adds_unit_tiles() const override { return true; }
  UnitBlock block(const Workload&, const Target& t, const Schedule&) const override {
    return {double(std::max(1, t.cube_m)), double(std::max(1, t.cube_n))};
  }
  int cores(const Schedule&, int available) const override { return available; }
  RegisterBlock registers(const Target&, const Schedule&) const override { return {}; }
  bool place_block(KernelPlan&, const BlockShape&, const Target&, const Schedule&) const override { return false; }
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
