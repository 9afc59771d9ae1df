#include "plan/export.hpp"

#include "core/atomic_file.hpp"

namespace atvoss::plan {

db::TableExportReport export_plan(const ModelPlan& plan, const std::string& table_path, const std::string& plan_path) {
  std::vector<table::TableEntry> entries;
  for (const auto& t : plan.tasks) entries.push_back({t.workload, t.schedule, t.time_us, t.provenance});
  const db::TableExportReport report = db::write_table(db::TargetInfo::from_target(plan.target), table_path, entries);
  write_file_atomically(plan_path, "job spec: field 'model_plan'",
                        [&](std::ostream& os) { os << plan.to_json().dump(1) << "\n"; });
  return report;
}

}  // namespace atvoss::plan
