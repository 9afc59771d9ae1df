#include "db/internal/schema.hpp"

#include <string>

#include "core/error.hpp"
#include "db/internal/sqlite.hpp"

namespace atvoss::db {
namespace {

// Version 1: measurements. One row per (workload, target, schedule key); the partial
// index records_best answers "fastest valid records of (workload, target)" by walking
// the index in time order, without touching failed rows or scanning the table.
constexpr std::string_view kV1 = R"sql(
CREATE TABLE targets(
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  description TEXT NOT NULL);
CREATE INDEX targets_name ON targets(name);
CREATE TABLE workloads(
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  op TEXT NOT NULL,
  description TEXT NOT NULL);
CREATE TABLE records(
  id INTEGER PRIMARY KEY,
  workload_id INTEGER NOT NULL REFERENCES workloads(id),
  target_id INTEGER NOT NULL REFERENCES targets(id),
  schedule TEXT NOT NULL,
  schedule_key TEXT NOT NULL,
  status TEXT NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  time_us REAL NOT NULL DEFAULT 0,
  repeats TEXT NOT NULL DEFAULT '[]',
  profile TEXT NOT NULL DEFAULT '{}',
  worker TEXT NOT NULL DEFAULT '',
  job TEXT NOT NULL DEFAULT '',
  tool_version TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL);
CREATE UNIQUE INDEX records_key ON records(workload_id, target_id, schedule_key);
CREATE INDEX records_best ON records(workload_id, target_id, time_us) WHERE status = 'ok';
CREATE INDEX records_target ON records(target_id);
)sql";

// Version 2: trained cost models and tuning jobs. (No index on records.created_at: every
// index costs each insert, and `query --since` is a rare CLI filter that may scan.)
constexpr std::string_view kV2 = R"sql(
CREATE TABLE models(
  id INTEGER PRIMARY KEY,
  target_id INTEGER NOT NULL REFERENCES targets(id),
  kind TEXT NOT NULL,
  feature_version INTEGER NOT NULL,
  blob BLOB NOT NULL,
  n_records INTEGER NOT NULL,
  metrics TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL);
CREATE INDEX models_lookup ON models(target_id, kind, feature_version, created_at);
CREATE TABLE jobs(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  spec TEXT NOT NULL DEFAULT '{}',
  state TEXT NOT NULL,
  progress REAL NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL);
)sql";

// Version 3: per-task state of a batch job (the tuner's search state), one small row
// per task, so a job saves the task that just ran instead of rewriting every task's state.
constexpr std::string_view kV3 = R"sql(
CREATE TABLE job_tasks(
  job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  task TEXT NOT NULL,
  state TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY(job_id, task)) WITHOUT ROWID;
)sql";

}  // namespace

const std::vector<std::string_view>& migrations() {
  static const std::vector<std::string_view> all = {kV1, kV2, kV3};
  return all;
}

void migrate(Connection& conn, int from, int to) {
  if (from < 0 || to > static_cast<int>(migrations().size()) || from > to) {
    throw Error(ErrorKind::internal, "no migration path from schema version " +
                                         std::to_string(from) + " to " + std::to_string(to));
  }
  for (int v = from; v < to; ++v) conn.exec(migrations()[static_cast<std::size_t>(v)]);
  conn.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
  conn.exec("PRAGMA user_version = " + std::to_string(to));
}

}  // namespace atvoss::db
