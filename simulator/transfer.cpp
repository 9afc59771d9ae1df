#include "simulator/transfer.hpp"

#include <algorithm>
#include <cmath>

namespace atvoss::simulator {

double copy_efficiency(double copy_bytes, double segment_bytes) {
  constexpr double kFullCopy = 16 * 1024;
  const double size_eff = std::min(1.0, 0.75 + 0.25 * copy_bytes / kFullCopy);
  double align_eff = 1.0;
  if (std::fmod(segment_bytes, 512.0) != 0) align_eff = std::fmod(segment_bytes, 32.0) == 0 ? 0.85 : 0.7;
  return size_eff * align_eff;
}

double load_cycles(const Target& t, std::span<const Copy> copies, double cycles_per_byte) {
  double total = 0, previous = -1;
  for (const Copy& c : copies) {
    if (c.bytes <= 0) continue;
    const double transfer = c.bytes * cycles_per_byte / copy_efficiency(c.bytes, c.segment_bytes);
    const double start = previous < 0 ? t.mte2_copy_start_cycles
                                      : std::max(0.0, t.mte2_copy_start_cycles - previous);
    total += start + transfer;
    previous = transfer;
  }
  return total;
}

double l2_hit_fraction(const Target& t, double distance_bytes) {
  const double l2 = static_cast<double>(t.l2_bytes);
  if (l2 <= 0) return 0;
  if (distance_bytes <= l2) return 1;
  return std::clamp(2.0 - distance_bytes / l2, 0.0, 1.0);
}

ReuseResult operand_reuse(const Target& t, const ReuseInput& in) {
  const double a_panel = in.a_unique / std::max(1.0, in.grid_m);
  const double b_panel = in.b_unique / std::max(1.0, in.grid_n);
  double a_miss = in.a_unique, b_miss = in.b_unique;
  const double a_rereads = std::max(0.0, in.grid_n - 1), b_rereads = std::max(0.0, in.grid_m - 1);
  switch (in.order) {
    case TileOrder::row_major:  // A panel reused by the next tile; B only after a whole row
      b_miss += in.b_unique * b_rereads * (1 - l2_hit_fraction(t, in.b_unique + a_panel));
      break;
    case TileOrder::column_major:
      a_miss += in.a_unique * a_rereads * (1 - l2_hit_fraction(t, in.a_unique + b_panel));
      break;
    case TileOrder::swizzled: {  // groups of g tile rows walked column by column
      const double g = std::min(4.0, std::max(1.0, in.grid_m));
      a_miss += in.a_unique * a_rereads * (1 - l2_hit_fraction(t, g * a_panel + 2 * b_panel));
      const double groups = std::ceil(std::max(1.0, in.grid_m) / g);
      b_miss += in.b_unique * (groups - 1) * (1 - l2_hit_fraction(t, in.b_unique + g * a_panel));
      break;
    }
  }
  ReuseResult r;
  r.l2_read_bytes = in.batch * (in.a_sweep * std::max(1.0, in.grid_n) +
                                in.b_sweep * std::max(1.0, in.grid_m));
  r.hbm_read_bytes = std::min(r.l2_read_bytes, in.batch * (a_miss + b_miss));
  return r;
}

}  // namespace atvoss::simulator
