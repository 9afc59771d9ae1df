#include "host/rowops_space.hpp"

#include "core/error.hpp"
#include "host/knob_values.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

bool is_reduction(const Workload& w) { return w.op() == "softmax" || w.op() == "layernorm"; }

Verdict check(const Workload& w, const Schedule& s, const MachineInfo& m) {
  const std::int64_t chunk = s.at(std::string(knobs::tile_n)) / m.lanes();
  const std::int64_t order = s.get_or(std::string(knobs::tile_order), 0);
  const std::int64_t needed = chunk * row_accumulators(w, order) + 2;
  if (needed > m.vector_registers) {
    return Verdict::invalid("registers: a chunk of " + std::to_string(chunk) + " vectors needs " +
                            std::to_string(needed) + " vectors > " + std::to_string(m.vector_registers));
  }
  return Verdict::valid();
}

}  // namespace

bool is_row_op(const Workload& w) {
  const std::string& op = w.op();
  return op == "elementwise" || op == "map" || op == "softmax" || op == "layernorm";
}

int row_accumulators(const Workload& w, std::int64_t tile_order) {
  if (!is_reduction(w)) return 0;
  return tile_order == 1 ? 2 : 1;  // online max and sum; sum and sum of squares
}

ScheduleSpace rowops_space_for(const Workload& w, const MachineInfo& m) {
  const std::int64_t lanes = m.lanes();
  std::vector<Knob> ks = {
      knob(knobs::tile_m, upto(w.dim("M"), {1, 4, 16, 64})),
      knob(knobs::tile_n, upto(w.dim("N"), {lanes, 2 * lanes, 4 * lanes, 8 * lanes})),
      knob(knobs::k_steps, {1, 4}),
      knob(knobs::async_copy_depth, {1, 2, 4}),
  };
  if (is_reduction(w)) ks.push_back(knob(knobs::tile_order, {0, 1}));
  if (!w.epilogue().empty()) ks.push_back(knob(knobs::fusion_level, fusion_values(w)));
  ks.push_back(knob(knobs::threads, thread_values(m)));
  return ScheduleSpace(std::move(ks), [w, m](const Schedule& s) { return check(w, s, m); });
}

Schedule rowops_default_schedule(const Workload& w, const MachineInfo& m) {
  // Blocks of 4 rows, chunks of 4 vectors, no unroll or prefetch, the classic multi-pass
  // algorithms, everything fused, one thread.
  const ScheduleSpace space = rowops_space_for(w, m);
  Schedule s;
  for (const auto& k : space.knobs()) {
    if (k.name == knobs::tile_m)
      s.set(k.name, closest(k.values, 4));
    else if (k.name == knobs::tile_n)
      s.set(k.name, closest(k.values, 4 * m.lanes()));
    else if (k.name == knobs::fusion_level)
      s.set(k.name, k.values.back());
    else
      s.set(k.name, k.values.front());  // k_steps 1, depth 1, order 0, threads 1
  }
  if (!space.check(s).ok) throw_bad_input("host: no valid default schedule for " + w.label());
  return s;
}

}  // namespace atvoss::host
