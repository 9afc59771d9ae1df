// Map: each built-in op family's template is an OpLowering of its own
// (<family>_template.cpp, sharing lowering/internal/templates.hpp), registered by family
// as a user op's lowering is by name; knobs_for(), plan_kernel(), space_for() and
// default_schedule() sit on top of whichever lowering a workload has.
#include "lowering/lowering.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <numeric>

#include "core/error.hpp"
#include "lowering/internal/templates.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::lowering {
namespace {

// The built-in families' templates, by OpFamily: fixed at start, so the search and the
// simulator, which lower on every plan_kernel call, never take a lock for them.
const OpLowering* family_lowering(OpFamily family) {
  static const auto table = [] {
    std::array<std::shared_ptr<const OpLowering>, 7> t{};
    t[std::size_t(OpFamily::matmul)] = templates::matmul_template();
    t[std::size_t(OpFamily::conv)] = templates::conv_template();
    t[std::size_t(OpFamily::depthwise)] = templates::depthwise_template();
    t[std::size_t(OpFamily::rows)] = templates::rows_template();
    t[std::size_t(OpFamily::attention)] = templates::attention_template();
    return t;
  }();
  const auto i = std::size_t(family);
  return i < table.size() ? table[i].get() : nullptr;
}

struct Registered {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const OpLowering>> by_op;
};

Registered& registered() {
  static Registered* r = new Registered;  // never destroyed: see core/op_registry.cpp
  return *r;
}

// Only ops of the custom family consult the registry: the built-in families, which every
// plan_kernel call of the search and the simulator takes, never pay for its lock.
std::shared_ptr<const OpLowering> custom_lowering(const Workload& w) {
  if (w.family() != OpFamily::custom) return nullptr;
  Registered& r = registered();
  std::lock_guard lock(r.mu);
  const auto it = r.by_op.find(w.op());
  return it == r.by_op.end() ? nullptr : it->second;
}

// The workload's lowering: a registered op's, or its family's template (which lives as long
// as the process, so a non-owning pointer is kept). bad_input naming the op if it has none.
std::shared_ptr<const OpLowering> lowering_of(const Workload& w) {
  if (auto custom = custom_lowering(w)) return custom;
  if (const OpLowering* family = family_lowering(w.family())) return {std::shared_ptr<void>(), family};
  throw_bad_input("lowering: op '" + w.op() + "' has no tiling template");
}

// Preferred value of a knob in a vendor-style default tiling.
std::int64_t preferred(const std::string& knob, const Workload& w, const Target& t) {
  const bool cube = w.is_matmul_like() || w.family() == OpFamily::attention;
  // Enough parts for the preferred output tiles to fill the cores, as a vendor's
  // weight-gradient kernel splits its reduction.
  if (knob == knobs::split_k) {
    const std::int64_t tm = preferred(std::string(knobs::tile_m), w, t),
                       tn = preferred(std::string(knobs::tile_n), w, t);
    const std::int64_t tiles = ((w.dim("M") + tm - 1) / tm) * ((w.dim("N") + tn - 1) / tn);
    std::int64_t parts = 1;
    while (tiles * parts < t.ai_cores) parts *= 2;
    return parts;
  }
  if (knob == knobs::tile_m) return cube ? 128 : 8;
  if (knob == knobs::tile_n) return cube || w.is_conv() ? 128 : 1024;
  if (knob == knobs::tile_k) return 64;
  if (knob == knobs::k_steps) return 2;
  if (knob == knobs::async_copy_depth) return 2;
  // What a vendor stack fuses by default (CANN's UB fusion, TensorRT): bias and
  // activations, and the residual add and normalisation after a matmul or conv
  // (docs/job-spec.md, "Fusion and the vendor default").
  if (knob == knobs::fusion_level) return 2;
  if (knob == knobs::tile_h || knob == knobs::tile_w) return 16;
  if (knob == knobs::tile_c) return 64;
  return 0;  // tile_order: row-major
}

bool is_size_knob(const std::string& name) { return name.rfind("tile_", 0) == 0 && name != knobs::tile_order; }

}  // namespace

double Footprint::peak() const { return *std::max_element(bytes.begin(), bytes.end()); }

double KernelPlan::tile_count() const {
  double n = 0;
  for (const auto& t : tiles) n += t.count;
  return n;
}

std::string format_bytes(double bytes) {
  char buf[64];
  if (bytes >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f GB", bytes / (1024.0 * 1024 * 1024));
  } else if (bytes >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f MB", bytes / (1024.0 * 1024));
  } else if (bytes >= 1024) {
    const double kb = bytes / 1024;
    std::snprintf(buf, sizeof buf, kb == std::floor(kb) ? "%.0f KB" : "%.1f KB", kb);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  }
  return buf;
}

void register_lowering(const std::string& op, std::shared_ptr<const OpLowering> lowering) {
  if (!lowering) throw_bad_input("register_lowering: op '" + op + "' needs a lowering");
  Registered& r = registered();
  std::lock_guard lock(r.mu);
  if (!r.by_op.emplace(op, std::move(lowering)).second) {
    throw_bad_input("register_lowering: op '" + op + "' already has a lowering");
  }
}

bool can_lower(const Workload& w) {
  if (w.op().empty()) return false;  // a default-constructed Workload names no op
  if (w.family() == OpFamily::table) return false;
  return w.family() != OpFamily::custom || custom_lowering(w) != nullptr;
}

std::vector<Knob> knobs_for(const Workload& w, const Target& t) { return lowering_of(w)->knobs(w, t); }

KernelPlan plan_kernel(const Workload& w, const Target& t, const Schedule& s) {
  if (const OpLowering* family = family_lowering(w.family())) return family->plan(w, t, s);  // no refcount
  return lowering_of(w)->plan(w, t, s);
}

ScheduleSpace space_for(const Workload& w, const Target& t) {
  auto lowering = lowering_of(w);
  return ScheduleSpace(lowering->knobs(w, t),
                       [w, t, lowering](const Schedule& s) { return lowering->plan(w, t, s).verdict; });
}

Schedule default_schedule(const Workload& w, const Target& t) {
  const ScheduleSpace space = space_for(w, t);
  // Walk the space with each knob's values ordered by closeness to the vendor
  // preference, first knob outermost; the first valid point is the default.
  std::vector<std::vector<int>> order;
  for (const auto& k : space.knobs()) {
    std::vector<int> idx(k.values.size());
    std::iota(idx.begin(), idx.end(), 0);
    const bool size_knob = is_size_knob(k.name);
    const double want = double(preferred(k.name, w, t));
    auto dist = [&](int i) {
      const double v = double(k.values[i]);
      return size_knob ? std::abs(std::log2(v) - std::log2(want)) : std::abs(v - want);
    };
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return dist(a) < dist(b); });
    order.push_back(std::move(idx));
  }
  Point digits(space.dimensions(), 0);
  for (std::uint64_t n = 0; n < space.size(); ++n) {
    Point p(space.dimensions());
    for (std::size_t d = 0; d < p.size(); ++d) p[d] = order[d][digits[d]];
    const Schedule s = space.schedule_at(p);
    if (space.check(s).ok) return s;
    for (std::size_t d = digits.size(); d-- > 0;) {
      if (++digits[d] < int(order[d].size())) break;
      digits[d] = 0;
    }
  }
  throw Error(ErrorKind::bad_input, "lowering: no valid schedule for " + w.label() + " on " + t.name);
}

}  // namespace atvoss::lowering
