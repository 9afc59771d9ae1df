#include "db/job_store.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "db/internal/rows.hpp"
#include "db/internal/sql.hpp"

namespace atvoss::db {

using rows::decode_job;
using rows::kJobSelect;

std::int64_t JobStore::create(const std::string& name, const Json& spec) {
  if (name.empty()) throw_bad_input("create_job: a job name must not be empty");
  return conn_.write([&] {
    // ON CONFLICT rather than a look first: two processes creating one name at once on a
    // server database would both pass the look.
    auto s = conn_.prepare(
        "INSERT INTO jobs(name, spec, state, progress, created_at, updated_at) "
        "VALUES(?1, ?2, 'pending', 0, ?3, ?3) ON CONFLICT(name) DO NOTHING RETURNING id");
    s->bind(1, name).bind(2, spec.dump()).bind(3, now_ms());
    if (!s->step()) throw_bad_input("create_job: a job named '" + name + "' already exists");
    return s->column_int64(0);
  });
}

std::int64_t job_lock_key(std::string_view name) {
  return static_cast<std::int64_t>(fnv1a64("atvoss job " + std::string(name)));
}

std::string job_lock_file(const std::string& db_path, std::string_view name) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(job_lock_key(name)));
  return db_path + ".job-" + hex + ".lock";
}

bool JobStore::try_run(const std::string& name) {
  if (conn_.dialect() == Dialect::postgres) {
    return conn_.read([&] {
      return conn_.query_int("SELECT pg_try_advisory_lock(" + std::to_string(job_lock_key(name)) + ")::int") == 1;
    });
  }
  if (rows::is_memory(conn_.path())) return true;
  auto lock = FileLock::take(job_lock_file(conn_.path(), name), false);
  if (!lock) return false;
  locks_.push_back(std::move(*lock));
  return true;
}

std::optional<JobRow> JobStore::get(std::int64_t id) const {
  return conn_.read([&]() -> std::optional<JobRow> {
    auto s = conn_.prepare(std::string(kJobSelect) + "WHERE id = ?1");
    s->bind(1, id);
    if (!s->step()) return std::nullopt;
    return decode_job(*s);
  });
}

std::optional<JobRow> JobStore::named(const std::string& name) const {
  return conn_.read([&]() -> std::optional<JobRow> {
    auto s = conn_.prepare(std::string(kJobSelect) + "WHERE name = ?1");
    s->bind(1, name);
    if (!s->step()) return std::nullopt;
    return decode_job(*s);
  });
}

std::vector<JobRow> JobStore::all() const {
  return conn_.read([&] {
    auto s = conn_.prepare(std::string(kJobSelect) + "ORDER BY id");
    std::vector<JobRow> out;
    while (s->step()) out.push_back(decode_job(*s));
    return out;
  });
}

void JobStore::update(std::int64_t id, const std::string& state, double progress) {
  conn_.write([&] {
    auto s = conn_.prepare("UPDATE jobs SET state = ?2, progress = ?3, updated_at = ?4 WHERE id = ?1");
    s->bind(1, id).bind(2, state).bind(3, progress).bind(4, now_ms()).run();
    if (conn_.changes() == 0) {
      throw Error(ErrorKind::not_found, "update_job: no job with id " + std::to_string(id));
    }
  });
}

void JobStore::update_spec(std::int64_t id, const Json& spec) {
  conn_.write([&] {
    auto s = conn_.prepare("UPDATE jobs SET spec = ?2, updated_at = ?3 WHERE id = ?1");
    s->bind(1, id).bind(2, spec.dump()).bind(3, now_ms()).run();
    if (conn_.changes() == 0) {
      throw Error(ErrorKind::not_found, "update_job_spec: no job with id " + std::to_string(id));
    }
  });
}

void JobStore::save_task(std::int64_t job_id, const std::string& task, const Json& state) {
  conn_.write([&] {
    auto exists = conn_.prepare("SELECT 1 FROM jobs WHERE id = ?1");
    exists->bind(1, job_id);
    if (!exists->step()) {
      throw Error(ErrorKind::not_found, "save_job_task: no job with id " + std::to_string(job_id));
    }
    auto s = conn_.prepare(
        "INSERT INTO job_tasks(job_id, task, state, updated_at) VALUES(?1, ?2, ?3, ?4) "
        "ON CONFLICT(job_id, task) DO UPDATE SET state = ?3, updated_at = ?4");
    s->bind(1, job_id).bind(2, task).bind(3, state.dump()).bind(4, now_ms()).run();
  });
}

std::map<std::string, Json> JobStore::tasks(std::int64_t job_id) const {
  return conn_.read([&] {
    auto s = conn_.prepare("SELECT task, state FROM job_tasks WHERE job_id = ?1");
    s->bind(1, job_id);
    std::map<std::string, Json> out;
    while (s->step()) {
      const std::string task(s->column_text(0));
      out[task] = parse_json(s->column_text(1), "stored state of job task " + task);
    }
    return out;
  });
}

bool JobStore::remove(std::int64_t id) {
  return conn_.write([&] {
    auto s = conn_.prepare("DELETE FROM jobs WHERE id = ?1");
    s->bind(1, id).run();
    return conn_.changes() > 0;
  });
}

}  // namespace atvoss::db
