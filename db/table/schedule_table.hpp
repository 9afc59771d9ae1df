// ScheduleTable: the runtime lookup a compiler uses to pick a schedule for an operator
// from an exported table file, with no SQLite or XGBoost dependency (library atvoss_table).
// Immutable after load(): lookup() is safe from many threads at once.
//
// Table file format (format_version 1), one JSON document:
//   {"header": {"format": "atvoss-schedule-table", "format_version": 1,
//               "target": {"key": ..., "name": ..., "description": {...}},
//               "created_at": "<ISO 8601 UTC>", "tool_version": "0.1.0",
//               "record_count": <entries>, "checksum": "sha256:<64 hex>"},
//    "entries": [{"workload": {...canonical Workload JSON...}, "workload_key": "<16 hex>",
//                 "schedule": {"tile_m": 64, ...}, "time_us": 12.5,
//                 "provenance": "zero-shot" (optional; absent means measured)}, ...]}
// The checksum is SHA-256 (OpenSSL) of the canonical compact JSON text of the "entries"
// array (keys sorted, no spaces: nlohmann::json::dump() / Python
// json.dumps(entries, sort_keys=True, separators=(",", ":")) for integer dims).
// A reader refuses a different format, a newer format_version, a record_count or checksum
// that does not match, and entries that are not valid workloads and schedules.
//
// Nearest-shape fallback: among entries with the same op, dtype and epilogue, the one with
// the smallest Euclidean distance over log2(d + 1) of every dim (so a factor of two in one
// large dim counts about 1; pad = 0 stays finite). Ties go to the lower workload key.
// Recorded workloads ({"op":"recorded"}) match exactly or not at all.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/schedule.hpp"
#include "core/workload.hpp"

namespace atvoss::table {

inline constexpr const char* kTableFormat = "atvoss-schedule-table";
inline constexpr int kTableFormatVersion = 1;

struct TableEntry {
  Workload workload;
  Schedule schedule;
  double time_us = 0;
  // Where the schedule comes from: "measured" (the best stored record; the key is left
  // out of the file), or, for a job's task the budget never reached, "zero-shot" (a cost
  // model's pick, time_us simulated without noise) or "default" (the vendor default).
  std::string provenance = "measured";
  Json to_json() const;
  static TableEntry from_json(const Json& j);  // bad_input naming the field
};

struct TableHeader {
  int format_version = kTableFormatVersion;
  std::string target_key;
  std::string target_name;
  Json target_description = Json::object();
  std::string created_at;
  std::string tool_version;
  std::int64_t record_count = 0;
  std::string checksum;  // "sha256:<hex>"
};

enum class MatchKind { exact, nearest, none };

struct LookupResult {
  MatchKind kind = MatchKind::none;
  const TableEntry* entry = nullptr;  // null for none; valid while the table lives
  double distance = 0;                // 0 for exact
  // {"match": "exact"|"nearest"|"none", "distance": d, "workload": ..., "schedule": ...,
  //  "time_us": t, "target": name}
  Json to_json(const std::string& target_name) const;
};

// "sha256:" + hex SHA-256 of canonical_dump(entries).
std::string body_checksum(const Json& entries);
// The whole table document for entries (header filled in, checksum computed).
Json make_table_json(const TableHeader& header_fields, const std::vector<TableEntry>& entries);

class ScheduleTable {
 public:
  // Reads and validates path. io if unreadable; corrupt on a bad checksum or count;
  // bad_input on a malformed document or unsupported format/version.
  static std::shared_ptr<const ScheduleTable> load(const std::string& path);
  static std::shared_ptr<const ScheduleTable> from_json(const Json& doc, const std::string& what);

  const TableHeader& header() const { return header_; }
  const std::vector<TableEntry>& entries() const { return entries_; }

  // Exact match by workload key, else nearest same-class workload, else none.
  LookupResult lookup(const Workload& workload) const;

  ScheduleTable(TableHeader header, std::vector<TableEntry> entries);  // use load()

 private:
  struct Group;  // entries of one (op, dtype, epilogue) class, with their log-dims
  TableHeader header_;
  std::vector<TableEntry> entries_;
  std::vector<std::pair<std::string, std::size_t>> by_key_;  // sorted workload key -> index
  std::vector<std::shared_ptr<const Group>> groups_;
  std::vector<std::string> group_names_;  // parallel to groups_, sorted
};

}  // namespace atvoss::table
