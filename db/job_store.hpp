// JobStore: the batch jobs of a tuning database (db::JobRow) and the per-task search state
// the tuner saves for each, so a killed job resumes exactly. A TuningDatabase owns one and
// hands it out as jobs(); it shares the database's connection.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_lock.hpp"
#include "db/record.hpp"

namespace atvoss::db {

class Connection;  // db/internal/sql.hpp

// The advisory lock key of a job's name (JobStore::try_run): 64 bits of fnv1a64.
std::int64_t job_lock_key(std::string_view name);
// The file an SQLite database's job lock lives in: beside the database,
// "<db>.job-<job_lock_key in hex>.lock".
std::string job_lock_file(const std::string& db_path, std::string_view name);

class JobStore {
 public:
  explicit JobStore(Connection& conn) : conn_(conn) {}
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  // bad_input if a job of that name exists.
  std::int64_t create(const std::string& name, const Json& spec);
  std::optional<JobRow> get(std::int64_t id) const;
  std::optional<JobRow> named(const std::string& name) const;
  std::vector<JobRow> all() const;
  // not_found if no such job. Bumps updated_at.
  void update(std::int64_t id, const std::string& state, double progress);
  void update_spec(std::int64_t id, const Json& spec);
  bool remove(std::int64_t id);  // false if absent (its task states go with it)
  // Per-task state of a job, replaced whole on every save. not_found if no such job.
  // A merge does not copy task states: they refer to this file's record ids.
  void save_task(std::int64_t job_id, const std::string& task, const Json& state);
  std::map<std::string, Json> tasks(std::int64_t job_id) const;

  // Takes, for the life of this store, the right to run the job of that name: false while
  // another process holds it. Two processes running one job at once each counted their own
  // budget under the job's one claim owner (a 40-trial job stored 67 trials). PostgreSQL: a
  // session advisory lock (job_lock_key); SQLite: an flock on job_lock_file. Either lets go
  // when the process dies, so a killed run's job resumes at once. An in-memory database:
  // always true.
  bool try_run(const std::string& name);

 private:
  Connection& conn_;
  std::vector<FileLock> locks_;  // SQLite: the job locks try_run took, held for the store's life
};

}  // namespace atvoss::db
