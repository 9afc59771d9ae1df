// Export of the runtime lookup table: the best valid schedule per workload measured on one
// target, written as the JSON table file that db/table/schedule_table.hpp loads (format
// documented there). Used by `atvoss-db export-table`, single-workload tuning and the model
// plan's export (plan/export.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/table/schedule_table.hpp"
#include "db/tuning_database.hpp"

namespace atvoss::db {

struct TableExportReport {
  std::int64_t entries = 0;
  std::string checksum;  // "sha256:<hex>" of the body, as written in the header
};

// Writes atomically (temporary file + rename), so a reader never sees half a table.
// `unmeasured`: entries for workloads without a valid record (a job's tasks the budget
// never reached, with their provenance); an entry whose workload has one is ignored.
// not_found if the table would be empty.
TableExportReport export_table(const TuningDatabase& db, const TargetInfo& target, const std::string& path,
                               const std::vector<table::TableEntry>& unmeasured = {});

// Writes exactly these entries as target's table (a model plan's schedules, plan/export.hpp),
// atomically. bad_input naming the workload when two entries share one; not_found if empty.
TableExportReport write_table(const TargetInfo& target, const std::string& path,
                              const std::vector<table::TableEntry>& entries);

}  // namespace atvoss::db
