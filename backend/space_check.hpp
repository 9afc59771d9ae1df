// SpaceCheck: whether a result someone hands us could have come from measuring here. The
// schedule must lie in the workload's space on the target (every knob present, every value
// on its list), and an ok result must also pass the space's validity check, since a schedule
// the space refuses is measured as invalid, never timed. Imports use it
// (db::TuningDatabase::import_jsonl takes it as its db::RecordCheck).
// Spaces are built once per (workload, target), so a large import stays cheap.
// Thread-safety: one object per thread (the memo is unguarded).
#pragma once

#include <map>
#include <string>

#include "core/json.hpp"
#include "core/measurement.hpp"
#include "core/schedule.hpp"
#include "core/schedule_space.hpp"
#include "core/workload.hpp"

namespace atvoss::backend {

class SpaceCheck {
 public:
  // bad_input naming the knob or the limit. target_description is a Target's JSON, or a
  // name-only {"name": ...} target, which only a table workload may have.
  void operator()(const Workload& w, const Json& target_description, const Schedule& s, const Measurement& m);

 private:
  const ScheduleSpace& space(const Workload& w, const Json& target_description);
  std::map<std::string, ScheduleSpace> spaces_;  // by workload key + target description
};

}  // namespace atvoss::backend
