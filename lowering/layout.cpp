#include "lowering/layout.hpp"

#include "lowering/knob_names.hpp"

namespace atvoss::lowering {

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::fractal:
      return "fractal";
    case Layout::nhwc:
      return "NHWC";
    case Layout::nchw:
      return "NCHW";
  }
  return "?";
}

bool has_layout_knob(const Workload& w) { return w.family() == OpFamily::conv; }

std::optional<Layout> layout_of(const Workload& w, const Schedule& s) {
  if (!has_layout_knob(w)) return std::nullopt;
  return Layout(s.get_or(std::string(knobs::layout), std::int64_t(kDefaultLayout)));
}

std::optional<Workload> layout_change(const Workload& w, Layout from, Layout to) {
  if (from == to) return std::nullopt;
  const std::int64_t hw = w.dim("H") * w.dim("W"), nc = w.dim("N") * w.dim("C");
  const std::int64_t c0 = 32 / dtype_bytes(w.dtype());
  std::int64_t m = nc, n = hw, inner = 1;  // [N*C, HW] -> [HW, N*C], element by element
  if (from == Layout::nhwc && to == Layout::nchw) {
    m = hw;
    n = nc;
  } else if (from != Layout::nchw && to != Layout::nchw) {
    // fractal <-> NHWC: [HW, C1, C0] <-> [C1, HW, C0], channels padded to C0.
    const std::int64_t blocks = (w.dim("C") + c0 - 1) / c0;
    m = from == Layout::nhwc ? w.dim("N") * hw : w.dim("N") * blocks;
    n = from == Layout::nhwc ? blocks * c0 : hw * c0;
    inner = c0;
  }
  return Workload::from_json(Json{{"op", "transpose"},
                                  {"dtype", std::string(to_string(w.dtype()))},
                                  {"dims", {{"M", m}, {"N", n}, {"inner", inner}}}});
}

}  // namespace atvoss::lowering
