#include "frontend/phase_conv.hpp"

#include <algorithm>

namespace atvoss::frontend {

std::optional<Json> phase_conv_dims(const std::vector<std::int64_t>& x, const std::vector<std::int64_t>& w,
                                    const std::vector<std::int64_t>& y, std::int64_t groups,
                                    const std::vector<std::int64_t>& strides,
                                    const std::vector<std::int64_t>& dilations, std::int64_t pad) {
  constexpr std::int64_t kSmallestPhase = 8;
  if (x.size() != 4 || w.size() != 4 || y.size() != 4 || dilations.size() != 2) return std::nullopt;
  const std::int64_t d = dilations[0], r = w[2];
  const bool unit_stride = std::all_of(strides.begin(), strides.end(), [](std::int64_t s) { return s == 1; });
  if (groups != 1 || !unit_stride || d < 2 || dilations[1] != d || w[3] != r || r % 2 == 0 || w[1] != x[1] ||
      pad != d * (r - 1) / 2 || y[2] != x[2] || y[3] != x[3]) {
    return std::nullopt;
  }
  const std::int64_t hp = (x[2] + d - 1) / d, wp = (x[3] + d - 1) / d;
  if (hp < kSmallestPhase || wp < kSmallestPhase) return std::nullopt;
  return Json{{"N", x[0] * d * d}, {"C", x[1]},   {"H", hp}, {"W", wp}, {"K", w[0]}, {"R", r}, {"S", r},
              {"stride", 1},       {"pad", r / 2}};
}

std::optional<Json> depth_conv_dims(const std::vector<std::int64_t>& x, const std::vector<std::int64_t>& w,
                                    const std::vector<std::int64_t>& y, std::int64_t groups,
                                    const std::vector<std::int64_t>& strides,
                                    const std::vector<std::int64_t>& dilations, const std::vector<std::int64_t>& pads) {
  if (x.size() != 5 || w.size() != 5 || y.size() != 5 || strides.size() != 3 || dilations.size() != 3 ||
      pads.size() != 6 || groups != 1 || w[1] != x[1]) {
    return std::nullopt;
  }
  const std::int64_t pad = pads[1];
  if (strides[1] != strides[2] || dilations[1] != 1 || dilations[2] != 1 || pads[2] != pad || pads[4] != pad ||
      pads[5] != pad) {
    return std::nullopt;
  }
  const std::int64_t stride = strides[1];
  if (x[3] + 2 * pad < w[3] || x[4] + 2 * pad < w[4]) return std::nullopt;
  if ((x[3] + 2 * pad - w[3]) / stride + 1 != y[3] || (x[4] + 2 * pad - w[4]) / stride + 1 != y[4]) return std::nullopt;
  return Json{{"N", 1},    {"C", w[2] * x[1]}, {"H", x[3]},        {"W", x[4]}, {"K", w[0]},
              {"R", w[3]}, {"S", w[4]},        {"stride", stride}, {"pad", pad}};
}

}  // namespace atvoss::frontend
