// JobStore: the batch jobs of a tuning database (db::JobRow) and the per-task search state
// the tuner saves for each, so a killed job resumes exactly. A TuningDatabase owns one and
// hands it out as jobs(); it shares the database's connection.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "db/record.hpp"

namespace atvoss::db {

class Connection;  // db/internal/sql.hpp

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

 private:
  Connection& conn_;
};

}  // namespace atvoss::db
