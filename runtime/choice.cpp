#include "runtime/choice.hpp"

#include <algorithm>
#include <cstdint>

#include "core/error.hpp"
#include "host/host_space.hpp"
#include "host/knob_values.hpp"

namespace atvoss::runtime {
namespace {

// s on the called shape's space: a knob value the space does not list becomes the closest
// listed one (ties to the smaller). The host space drops tile values above twice a dim because
// the kernel clamps such a block to the dim (docs/host-backend.md), so for tile sizes this
// keeps the blocking the entry ran with. A knob the entry lacks (a table exported before the
// knob existed, e.g. threads) takes the default schedule's value. moved lists what changed
// ("tile_k 512 -> 64", "threads absent -> 1").
Schedule onto_space(const ScheduleSpace& space, const Schedule& s, const Schedule& fallback, std::string& moved) {
  Schedule out = s;
  for (const Knob& k : space.knobs()) {
    if (!s.has(k.name)) {
      if (!fallback.has(k.name)) continue;  // check() names the missing knob
      out.set(k.name, fallback.at(k.name));
      moved += (moved.empty() ? "" : ", ") + k.name + " absent -> " + std::to_string(fallback.at(k.name));
      continue;
    }
    const std::int64_t v = s.at(k.name);
    if (std::find(k.values.begin(), k.values.end(), v) != k.values.end()) continue;
    const std::int64_t to = host::closest(k.values, v);
    out.set(k.name, to);
    moved += (moved.empty() ? "" : ", ") + k.name + " " + std::to_string(v) + " -> " + std::to_string(to);
  }
  return out;
}

}  // namespace

std::string_view to_string(ChoiceKind kind) noexcept {
  switch (kind) {
    case ChoiceKind::exact:
      return "exact";
    case ChoiceKind::nearest:
      return "nearest";
    case ChoiceKind::fallback:
      return "default";
  }
  return "default";
}

Json Choice::to_json() const {
  return Json{
      {"kind", std::string(to_string(kind))},       {"schedule", schedule.to_json()}, {"reason", reason},
      {"entry", entry ? entry->to_json() : Json()}, {"distance", distance},           {"table_time_us", table_time_us}};
}

Choice choose_schedule(const table::ScheduleTable* table, const std::string& no_table_reason, const Workload& w,
                       const host::MachineInfo& machine) {
  std::string why;
  if (!host::supports(w, &why)) throw_bad_input("runtime: " + why);
  Choice c;
  c.schedule = host::default_schedule(w, machine);
  if (table == nullptr) {
    c.reason = no_table_reason;
    return c;
  }
  const table::LookupResult found = table->lookup(w);
  if (found.kind == table::MatchKind::none) {
    c.reason =
        "the table has no " + w.op() + " entry with dtype " + std::string(to_string(w.dtype())) + " and this epilogue";
    return c;
  }
  const bool exact = found.kind == table::MatchKind::exact;
  const ScheduleSpace space = host::space_for(w, machine);
  std::string moved;
  const Schedule schedule = onto_space(space, found.entry->schedule, c.schedule, moved);
  const Verdict v = space.check(schedule);
  if (!v.ok) {
    c.reason = std::string(exact ? "the exact" : "the nearest") + " entry (" + found.entry->workload.label() +
               ")'s schedule is not valid for " + w.label() + ": " + v.reason;
    return c;
  }
  c.kind = exact ? ChoiceKind::exact : ChoiceKind::nearest;
  c.schedule = schedule;
  c.entry = found.entry->workload;
  c.distance = found.distance;
  c.table_time_us = found.entry->time_us;
  c.reason =
      exact ? "tuned entry for this workload" : "tuned entry of the nearest shape " + found.entry->workload.label();
  if (!moved.empty()) c.reason += "; moved onto this shape's space: " + moved;
  return c;
}

}  // namespace atvoss::runtime
