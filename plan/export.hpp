// Export of a model plan: the lookup table holds exactly the plan's schedules, one entry per
// task with the plan's noise-free time and provenance, so that a lookup of any task's workload
// returns the schedule the plan's figure used; the plan file beside it holds the rest
// (model_plan.hpp). Both are written atomically.
#pragma once

#include <string>

#include "db/table_export.hpp"
#include "plan/model_plan.hpp"

namespace atvoss::plan {

// The table of plan's schedules at table_path, then the plan at plan_path.
db::TableExportReport export_plan(const ModelPlan& plan, const std::string& table_path, const std::string& plan_path);

}  // namespace atvoss::plan
