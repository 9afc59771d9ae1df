// Best lookup: the one answer to "which schedule for this workload on this target", shared
// by `atvoss-db best`, the /v1/best endpoint of `atvoss-db serve` and that of the farm. The
// target is resolved one way everywhere (resolve_stored_target); the answer is the
// workload's best valid record, else the best of the nearest comparable workload, found as
// the runtime lookup table finds it (db/table/schedule_table.hpp).
#pragma once

#include <string>

#include "core/json.hpp"
#include "core/schedule.hpp"
#include "core/workload.hpp"
#include "db/tuning_database.hpp"

namespace atvoss::db {

// A stored target by key, or by name where exactly one stored target has that name.
// bad_input listing the keys when several share the name; not_found when none matches.
TargetInfo resolve_stored_target(const TuningDatabase& db, const std::string& name_or_key);

struct BestAnswer {
  std::string match;    // "exact", or "nearest" (another workload of the same op, dtype, epilogue)
  double distance = 0;  // 0 for exact; the table's shape distance otherwise
  Workload workload;    // the workload whose record answered
  Schedule schedule;
  double time_us = 0;
  TargetInfo target;
  Json to_json() const;  // the /v1/best body
};

// not_found when neither the workload nor a comparable one has a valid record on target.
BestAnswer best_or_nearest(const TuningDatabase& db, const TargetInfo& target, const Workload& workload);

}  // namespace atvoss::db
