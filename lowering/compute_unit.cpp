// Map: the NPU's matrix unit (the built-in ComputeUnit) and the registry of the others.
#include "lowering/compute_unit.hpp"

#include <algorithm>
#include <map>
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
    return {double(std::max(1, t.cube_m)), double(std::max(1, t.cube_n)), false};
  }
  int cores(const Schedule&, int available) const override { return available; }
  RegisterBlock registers(const Target&, const Schedule&) const override { return {}; }
  bool place_block(KernelPlan&, const BlockShape&, const Target&, const Schedule&) const override { return false; }
};

struct UnitRegistry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const ComputeUnit>, std::less<>> by_organisation;
};

UnitRegistry& unit_registry() {
  static UnitRegistry* r = new UnitRegistry;  // never destroyed: see core/op_registry.cpp
  return *r;
}

bool built_in(std::string_view organisation) { return organisation == "coupled" || organisation == "split"; }

}  // namespace

const ComputeUnit& compute_unit(const Target& t) {
  static const MatrixUnit matrix;
  // The NPU organisations, which every plan of the simulator and the search asks for, take no lock.
  if (built_in(t.organisation)) return matrix;
  UnitRegistry& r = unit_registry();
  std::lock_guard lock(r.mu);
  const auto it = r.by_organisation.find(t.organisation);
  if (it == r.by_organisation.end()) {
    throw Error(ErrorKind::internal, "lowering: no compute unit is registered for targets of organisation '" +
                                         t.organisation + "' (its backend registers one: lowering/compute_unit.hpp)");
  }
  return *it->second;  // registrations live as long as the process
}

void register_compute_unit(const std::string& organisation, std::shared_ptr<const ComputeUnit> unit) {
  if (!unit) throw_bad_input("register_compute_unit: organisation '" + organisation + "' needs a unit");
  if (built_in(organisation)) {
    throw_bad_input("register_compute_unit: organisation '" + organisation + "' has the built-in matrix unit");
  }
  UnitRegistry& r = unit_registry();
  std::lock_guard lock(r.mu);
  if (!r.by_organisation.emplace(organisation, std::move(unit)).second) {
    throw_bad_input("register_compute_unit: organisation '" + organisation + "' already has a unit");
  }
}

}  // namespace atvoss::lowering
