#include "simulator/internal/transfer.hpp"

#include <algorithm>
#include <cmath>

#include "core/cache_reuse.hpp"

namespace atvoss::simulator {

double copy_efficiency(double copy_bytes, double segment_bytes) {
  constexpr double kFullCopy = 16 * 1024;
  const double size_eff = std::min(1.0, 0.75 + 0.25 * copy_bytes / kFullCopy);
  double align_eff = 1.0;
  if (std::fmod(segment_bytes, 512.0) != 0) align_eff = std::fmod(segment_bytes, 32.0) == 0 ? 0.85 : 0.7;
  return size_eff * align_eff;
}

double load_cycles(const Target& t, std::span<const lowering::Copy> copies, double cycles_per_byte) {
  double total = 0, previous = -1;
  for (const auto& c : copies) {
    if (c.bytes <= 0) continue;
    const double transfer = c.bytes * cycles_per_byte / copy_efficiency(c.bytes, c.segment_bytes);
    const double start = previous < 0 ? t.mte2_copy_start_cycles : std::max(0.0, t.mte2_copy_start_cycles - previous);
    total += start + transfer;
    previous = transfer;
  }
  return total;
}

double l2_hit_fraction(const Target& t, double distance_bytes) {
  return cache_hit_fraction(static_cast<double>(t.l2_bytes), distance_bytes);
}

namespace {
double misses(const Target& t, const lowering::OperandReuse& r) {
  if (r.rereads <= 0) return r.unique_bytes;
  return r.unique_bytes + r.unique_bytes * r.rereads * (1 - l2_hit_fraction(t, r.distance_bytes));
}
}  // namespace

ReuseResult operand_reuse(const Target& t, const lowering::KernelPlan& p) {
  ReuseResult r;
  r.l2_read_bytes = p.batch * p.operand_read_bytes;
  r.hbm_read_bytes = std::min(r.l2_read_bytes, p.batch * (misses(t, p.a) + misses(t, p.b)));
  return r;
}

}  // namespace atvoss::simulator
