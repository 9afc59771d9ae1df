#include "host/host_space.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "host/conv_space.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

// Values above twice the dim only repeat the clamped block; the smallest stays as an edge.
std::vector<std::int64_t> upto(std::int64_t dim, std::vector<std::int64_t> values) {
  std::vector<std::int64_t> out;
  for (auto v : values) {
    if (out.empty() || v < 2 * dim) out.push_back(v);
  }
  return out;
}

int highest_level(const Workload& w) {
  int level = 0;
  for (const auto& op : w.epilogue()) {
    for (int l = 0; l <= 2; ++l) {
      if (lowering::split_epilogue({op}, l).unfused.empty()) {
        level = std::max(level, l);
        break;
      }
    }
  }
  return level;
}

Knob knob(std::string_view name, std::vector<std::int64_t> values) {
  return Knob{std::string(name), std::move(values)};
}

Verdict check(const Schedule& s, const MachineInfo& m) {
  const std::int64_t mr = s.at(std::string(knobs::micro_m)), nr = s.at(std::string(knobs::micro_n));
  const std::int64_t kc = s.at(std::string(knobs::tile_k)), mc = s.at(std::string(knobs::tile_m));
  const std::int64_t nc = s.at(std::string(knobs::tile_n));
  const std::int64_t nv = nr / m.lanes();
  if (mr * nv + nv + 1 > m.vector_registers) {
    return Verdict::invalid("registers: " + std::to_string(mr) + "x" + std::to_string(nr) +
                            " needs " + std::to_string(mr * nv + nv + 1) + " vectors > " +
                            std::to_string(m.vector_registers));
  }
  if (kc * nr * 4 > m.l1d_bytes) {
    return Verdict::invalid("L1d: B panel " + std::to_string(kc * nr * 4) + " B > " +
                            std::to_string(m.l1d_bytes) + " B");
  }
  if (mc * kc * 4 > m.l2_bytes) {
    return Verdict::invalid("L2: A block " + std::to_string(mc * kc * 4) + " B > " +
                            std::to_string(m.l2_bytes) + " B");
  }
  const std::int64_t llc = std::max(m.l3_bytes, m.l2_bytes);
  if (kc * nc * 4 > llc) {
    return Verdict::invalid("L3: B block " + std::to_string(kc * nc * 4) + " B > " +
                            std::to_string(llc) + " B");
  }
  return Verdict::valid();
}

}  // namespace

bool supports(const Workload& w, std::string* why) {
  if (w.is_conv()) return conv_supports(w, why);
  std::string reason;
  if (!w.is_matmul_like()) reason = "op '" + w.op() + "': the host backend generates matmul and batch_matmul";
  else if (w.dtype() != DType::float32) reason = "field 'dtype': the host backend computes \"float32\" only";
  else if (w.has_epilogue("layernorm")) reason = "field 'epilogue': layernorm is not generated on the host";
  if (why) *why = reason;
  return reason.empty();
}

ScheduleSpace space_for(const Workload& w, const MachineInfo& m) {
  if (w.is_conv()) return conv_space_for(w, m);
  std::string why;
  if (!supports(w, &why)) throw_bad_input("host: " + why);
  const std::int64_t lanes = m.lanes();
  std::vector<std::int64_t> fusion = {0};
  if (const int top = highest_level(w); top > 0) fusion.push_back(top);
  std::vector<Knob> ks = {
      knob(knobs::micro_m, {4, 6, 8}),
      knob(knobs::micro_n, {lanes, 2 * lanes, 3 * lanes}),
      knob(knobs::tile_m, upto(w.dim("M"), {48, 96, 192})),
      knob(knobs::tile_n, upto(w.dim("N"), {256, 1024, 4096})),
      knob(knobs::tile_k, upto(w.dim("K"), {64, 128, 256, 512})),
      knob(knobs::k_steps, {1, 4}),
      knob(knobs::async_copy_depth, {1, 2}),
      knob(knobs::tile_order, {0, 1, 2}),
      knob(knobs::fusion_level, std::move(fusion)),
  };
  return ScheduleSpace(std::move(ks), [m](const Schedule& s) { return check(s, m); });
}

Schedule default_schedule(const Workload& w, const MachineInfo& m) {
  if (w.is_conv()) return conv_default_schedule(w, m);
  // BLIS-like: the widest register block that fits, mc 96, kc 256, nc as large as allowed.
  const ScheduleSpace space = space_for(w, m);
  const std::vector<std::int64_t> preferred_mr = {6, 4, 8};
  for (std::int64_t mr : preferred_mr) {
    for (std::int64_t nv : {2, 3, 1}) {
      Schedule s;
      for (const auto& k : space.knobs()) {
        const auto closest = [&](std::int64_t want) {
          return *std::min_element(k.values.begin(), k.values.end(), [&](auto a, auto b) {
            return std::abs(a - want) < std::abs(b - want);
          });
        };
        if (k.name == knobs::micro_m) s.set(k.name, mr);
        else if (k.name == knobs::micro_n) s.set(k.name, nv * m.lanes());
        else if (k.name == knobs::tile_m) s.set(k.name, closest(96));
        else if (k.name == knobs::tile_n) s.set(k.name, closest(4096));
        else if (k.name == knobs::tile_k) s.set(k.name, closest(256));
        else if (k.name == knobs::k_steps) s.set(k.name, 4);
        else if (k.name == knobs::async_copy_depth) s.set(k.name, 1);
        else if (k.name == knobs::tile_order) s.set(k.name, 0);
        else s.set(k.name, k.values.back());
      }
      if (space.check(s).ok) return s;
    }
  }
  throw_bad_input("host: no valid default schedule for " + w.label());
}

}  // namespace atvoss::host
