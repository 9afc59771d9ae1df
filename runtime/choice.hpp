// Choice: which schedule the runtime runs for a workload, and why. choose_schedule() asks the
// exported table (db/table/schedule_table.hpp, whose exact / nearest-shape rule is the
// project's one lookup), moves the entry's schedule onto the host space of the shape actually
// called (a tile value that shape's space does not list becomes the closest listed one), and
// keeps it if that space's check accepts it; otherwise it takes the host default schedule and
// says why (docs/runtime.md, "Which schedule runs").
// Pure functions: thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/json.hpp"
#include "core/schedule.hpp"
#include "core/workload.hpp"
#include "db/table/schedule_table.hpp"
#include "host/machine.hpp"

namespace atvoss::runtime {

// exact: the table's entry for this workload; nearest: the entry of the nearest shape of
// the same op, dtype and epilogue; fallback: the host default schedule ("default").
enum class ChoiceKind { exact, nearest, fallback };

std::string_view to_string(ChoiceKind kind) noexcept;  // "exact", "nearest", "default"

struct Choice {
  ChoiceKind kind = ChoiceKind::fallback;
  Schedule schedule;
  std::string reason;             // why this kind; names the missing entry or invalid knob
  std::optional<Workload> entry;  // the table entry's workload (exact and nearest)
  double distance = 0;            // shape distance of a nearest entry (schedule_table.hpp)
  double table_time_us = 0;       // the time the tuner measured for the entry
  // {"kind", "schedule", "reason", "entry" (workload or null), "distance", "table_time_us"}
  Json to_json() const;
};

// table may be null: then the default, with no_table_reason as the reason.
// bad_input naming the field when the host backend generates no code for w.
Choice choose_schedule(const table::ScheduleTable* table, const std::string& no_table_reason, const Workload& w,
                       const host::MachineInfo& machine);

}  // namespace atvoss::runtime
