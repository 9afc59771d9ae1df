#include "plan/variant.hpp"

namespace atvoss::plan {

double ModelVariant::end_to_end_us() const {
  double total = 0;
  for (const auto& op : ops) {
    if (op.measurement && op.measurement->ok()) total += op.weight * op.measurement->time_us;
  }
  for (const auto& c : layout_changes) total += c.time_us;
  return total + fallback_us;
}

double ModelVariant::throughput(int batch) const {
  const double t = end_to_end_us();
  return t > 0 ? batch * 1e6 / t : 0;
}

}  // namespace atvoss::plan
