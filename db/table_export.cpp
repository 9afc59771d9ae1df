#include "db/table_export.hpp"

#include <set>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "db/table/schedule_table.hpp"

namespace atvoss::db {

TableExportReport export_table(const TuningDatabase& db, const TargetInfo& target, const std::string& path,
                               const std::vector<table::TableEntry>& unmeasured) {
  std::vector<table::TableEntry> entries;
  std::set<std::string> keys;
  for (BestEntry& b : db.records().best_per_workload(target.key)) {
    keys.insert(b.workload.key());
    entries.push_back(table::TableEntry{std::move(b.workload), std::move(b.schedule), b.time_us});
  }
  for (const auto& e : unmeasured) {
    if (keys.insert(e.workload.key()).second) entries.push_back(e);
  }
  if (entries.empty()) {
    throw Error(ErrorKind::not_found,
                "export-table: no valid record for target '" + target.name + "' (" + target.key + ") in " + db.path());
  }
  return write_table(target, path, entries);
}

TableExportReport write_table(const TargetInfo& target, const std::string& path,
                              const std::vector<table::TableEntry>& entries) {
  if (entries.empty()) throw Error(ErrorKind::not_found, "export-table: no entry to write for '" + target.name + "'");
  std::set<std::string> keys;
  for (const auto& e : entries) {
    if (!keys.insert(e.workload.key()).second) {
      throw Error(ErrorKind::bad_input, "export-table: two entries for workload " + e.workload.label());
    }
  }
  table::TableHeader header;
  header.target_key = target.key;
  header.target_name = target.name;
  header.target_description = target.description;
  header.created_at = format_time_ms(now_ms());
  header.tool_version = default_tool_version();
  const Json doc = table::make_table_json(header, entries);

  // A compiler loading the table meanwhile sees the old file or the new one, never half.
  write_file_atomically(path, "export-table", [&](std::ostream& out) {
    // Header first, so that `head` on a table shows what it is (Json objects sort keys).
    out << "{\"header\": " << doc["header"].dump(1) << ",\n\"entries\": " << doc["entries"].dump(1) << "}\n";
  });
  return TableExportReport{static_cast<std::int64_t>(entries.size()), doc["header"]["checksum"].get<std::string>()};
}

}  // namespace atvoss::db
