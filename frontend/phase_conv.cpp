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

namespace {

// The first output o >= 0 with o * stride >= v (v may be negative).
std::int64_t first_at_least(std::int64_t v, std::int64_t stride) { return v <= 0 ? 0 : (v + stride - 1) / stride; }

}  // namespace

std::vector<TapSpan> tap_spans(std::int64_t in, std::int64_t out, std::int64_t taps, std::int64_t stride,
                               std::int64_t pad, std::int64_t dilation) {
  // Tap t reads the input at outputs [first_t, end_t): 0 <= o stride - pad + t dilation < in.
  std::vector<std::int64_t> cuts{0, out};
  const auto first = [&](std::int64_t t) { return std::min(out, first_at_least(pad - t * dilation, stride)); };
  const auto end = [&](std::int64_t t) {
    return std::clamp<std::int64_t>(first_at_least(in + pad - t * dilation, stride), first(t), out);
  };
  for (std::int64_t t = 0; t < taps; ++t) {
    cuts.push_back(first(t));
    cuts.push_back(end(t));
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<TapSpan> spans;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    TapSpan s{cuts[i], cuts[i + 1], taps, 0};
    for (std::int64_t t = 0; t < taps; ++t) {
      if (first(t) <= s.out_begin && s.out_begin < end(t)) {
        s.tap_begin = std::min(s.tap_begin, t);
        s.tap_end = t + 1;
      }
    }
    if (s.tap_end <= s.tap_begin) s.tap_begin = s.tap_end = 0;
    if (!spans.empty() && spans.back().tap_begin == s.tap_begin && spans.back().tap_end == s.tap_end) {
      spans.back().out_end = s.out_end;
    } else {
      spans.push_back(s);
    }
  }
  return spans;
}

std::vector<ConvRegion> sparse_conv_regions(const ConvAxis& h, const ConvAxis& w) {
  const auto along = [](const ConvAxis& a) { return tap_spans(a.in, a.out, a.taps, a.stride, a.pad, a.dilation); };
  std::vector<ConvRegion> regions;
  std::int64_t work = 0;
  for (const TapSpan& sh : along(h)) {
    for (const TapSpan& sw : along(w)) {
      regions.push_back(ConvRegion{sh, sw});
      if (regions.back().taps() == 0) return {};
      work += regions.back().pixels() * regions.back().taps();
    }
  }
  if (5 * work > 4 * h.out * w.out * h.taps * w.taps) return {};
  return regions;
}

const ConvRegion& largest_region(const std::vector<ConvRegion>& regions) {
  return *std::max_element(regions.begin(), regions.end(), [](const ConvRegion& a, const ConvRegion& b) {
    return a.pixels() * a.taps() < b.pixels() * b.taps();
  });
}

}  // namespace atvoss::frontend
