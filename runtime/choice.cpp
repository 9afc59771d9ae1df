#include "runtime/choice.hpp"

#include "core/error.hpp"
#include "host/host_space.hpp"

namespace atvoss::runtime {

std::string_view to_string(ChoiceKind kind) noexcept {
  switch (kind) {
    case ChoiceKind::exact: return "exact";
    case ChoiceKind::nearest: return "nearest";
    case ChoiceKind::fallback: return "default";
  }
  return "default";
}

Json Choice::to_json() const {
  return Json{{"kind", std::string(to_string(kind))}, {"schedule", schedule.to_json()},
              {"reason", reason}, {"entry", entry ? entry->to_json() : Json()},
              {"distance", distance}, {"table_time_us", table_time_us}};
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
    c.reason = "the table has no " + w.op() + " entry with dtype " + std::string(to_string(w.dtype())) +
               " and this epilogue";
    return c;
  }
  const bool exact = found.kind == table::MatchKind::exact;
  const Verdict v = host::space_for(w, machine).check(found.entry->schedule);
  if (!v.ok) {
    c.reason = std::string(exact ? "the exact" : "the nearest") + " entry (" + found.entry->workload.label() +
               ")'s schedule is not valid for " + w.label() + ": " + v.reason;
    return c;
  }
  c.kind = exact ? ChoiceKind::exact : ChoiceKind::nearest;
  c.schedule = found.entry->schedule;
  c.entry = found.entry->workload;
  c.distance = found.distance;
  c.table_time_us = found.entry->time_us;
  c.reason = exact ? "tuned entry for this workload"
                   : "tuned entry of the nearest shape " + found.entry->workload.label();
  return c;
}

}  // namespace atvoss::runtime
