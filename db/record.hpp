// Record: one stored measurement of one schedule of one workload on one target,
// plus the small value types the TuningDatabase API trades in (target identity,
// filters, models, jobs, stats, reports). Plain values: copy them freely between threads.
//
// A target is stored by identity (key), a display name and its description JSON, not
// as an atvoss::Target, so that records measured elsewhere (a Kernel Tuner cache of a
// GPU, a target file this build cannot parse) can be stored, merged and exported too.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/measurement.hpp"
#include "core/schedule.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"

namespace atvoss::db {

// Identity of a hardware target as the database sees it.
struct TargetInfo {
  std::string key;                    // unique identity; every query filters by it
  std::string name;                   // for people and for --target lookups by name
  Json description = Json::object();  // the full description (Target::to_json for NPUs)

  // key = Target::key(), name = target.name, description = target.to_json().
  static TargetInfo from_target(const Target& target);
  // A target known only by name (recorded GPU spaces): description {"name": name},
  // key = stable_key(description), so the same name has the same key everywhere.
  static TargetInfo named(const std::string& name);
  // bad_input unless this is a target this build knows and its key matches its
  // description: a name-only target ({"name": ...}, as named() makes) or a Target that
  // Target::from_json reads, with key == Target::key(). Imports check it; stores from
  // this build are consistent by construction.
  void check() const;

  friend bool operator==(const TargetInfo& a, const TargetInfo& b) { return a.key == b.key; }
};

// The atvoss version this build stamps on new records and exports.
std::string default_tool_version();

// Unix time in milliseconds now, and its ISO 8601 UTC text ("2026-11-29T14:20:00.123Z").
std::int64_t now_ms();
std::string format_time_ms(std::int64_t ms);
// Accepts ISO 8601 UTC ("2026-11-29", "2026-11-29T14:20:00[.sss][Z]") or integer unix
// seconds; bad_input naming `what` otherwise.
std::int64_t parse_time_ms(const std::string& text, const std::string& what);

struct Record {
  std::int64_t id = 0;  // assigned by the database; 0 before insert
  Workload workload;
  TargetInfo target;
  Schedule schedule;
  Measurement measurement;
  std::string worker;  // who measured it ("local", a worker id, "kernel_tuner")
  std::string job;     // job name, may be empty
  std::string tool_version = default_tool_version();
  std::int64_t created_at_ms = 0;  // 0 on insert means "now"

  Record() = default;
  Record(Workload w, TargetInfo t, Schedule s, Measurement m)
      : workload(std::move(w)), target(std::move(t)), schedule(std::move(s)), measurement(std::move(m)) {}
  // Convenience for NPU targets: same as passing TargetInfo::from_target(target).
  Record(Workload w, const Target& t, Schedule s, Measurement m)
      : Record(std::move(w), TargetInfo::from_target(t), std::move(s), std::move(m)) {}

  // One self-describing JSON-lines object (see tuning_database.hpp, export_jsonl).
  Json to_json() const;
  // bad_input naming the missing or mistyped field; rejects infrastructure statuses.
  static Record from_json(const Json& j);
};

// What an import asks beyond the record's own consistency: whether its schedule lies in
// the workload's space on that target (given by its description). The database knows no
// spaces, so the caller supplies this (backend::SpaceCheck). bad_input naming what is wrong.
using RecordCheck =
    std::function<void(const Workload&, const Json& target_description, const Schedule&, const Measurement&)>;

// Filters for query/export. Empty optionals mean "any".
struct RecordFilter {
  std::optional<std::string> target_key;
  std::optional<std::string> workload_key;
  std::optional<std::string> op;
  std::optional<Status> status;
  std::optional<std::int64_t> since_ms;  // created_at_ms >= since_ms
  std::int64_t limit = 0;                // 0 = no limit
};

// A trained cost model as stored (the blob is opaque to the database).
struct ModelRecord {
  std::int64_t id = 0;
  std::string target_key;
  std::string kind;         // e.g. "xgboost", "linear"
  int feature_version = 0;  // the featuriser layout the model was trained with
  std::vector<std::uint8_t> blob;
  std::int64_t n_records = 0;  // training set size
  Json metrics = Json::object();
  std::int64_t created_at_ms = 0;  // 0 on save means "now"
};

// One batch job as stored (db/job_store.hpp).
struct JobRow {
  std::int64_t id = 0;
  std::string name;  // unique
  Json spec = Json::object();
  std::string state = "pending";  // free text owned by the tuner: pending, running, done, failed...
  double progress = 0;            // 0..1
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;
};

struct TargetStats {
  TargetInfo target;
  std::int64_t workloads = 0;
  std::int64_t records = 0;
  std::int64_t ok = 0;
  std::int64_t failed = 0;  // candidate errors
};

struct Stats {
  int schema_version = 0;
  std::int64_t targets = 0, workloads = 0, records = 0, models = 0, jobs = 0;
  std::vector<std::pair<std::string, std::int64_t>> by_status;  // status -> records
  std::vector<TargetStats> per_target;
  std::int64_t file_bytes = 0;  // 0 for :memory:
};

// How a duplicate (same workload, target and schedule key) was resolved on merge or import.
struct MergeReport {
  std::int64_t added = 0;      // new keys
  std::int64_t identical = 0;  // same key, same result: skipped
  std::int64_t combined = 0;   // same key, different repeats: both sets of repeats kept
  std::int64_t conflicts = 0;  // same key, different status: the ok result (or the existing one) kept
  std::int64_t models = 0;     // models copied (merge only)
  std::int64_t jobs = 0;       // jobs copied (merge only; a job whose name exists is skipped)
  Json to_json() const;
};

}  // namespace atvoss::db
