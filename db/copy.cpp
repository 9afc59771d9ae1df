// TuningDatabase::copy_from: a whole database copied into an empty one, row for row with
// the same ids, so that job task states (which name record ids) stay valid. This is how
// `atvoss-db migrate` moves an SQLite file to a PostgreSQL server and back.
#include <string>
#include <vector>

#include "core/error.hpp"
#include "db/internal/sql.hpp"
#include "db/tuning_database.hpp"

namespace atvoss::db {
namespace {

// One table: its columns and their kinds (i: integer, d: double, t: text, b: blob), in
// the order a foreign key needs them (targets and workloads before records).
struct TableCopy {
  const char* name;
  std::vector<std::pair<const char*, char>> columns;
  bool has_id = true;
};

const std::vector<TableCopy>& tables() {
  static const std::vector<TableCopy> all = {
      {"targets", {{"id", 'i'}, {"key", 't'}, {"name", 't'}, {"description", 't'}}},
      {"workloads", {{"id", 'i'}, {"key", 't'}, {"op", 't'}, {"description", 't'}}},
      {"records",
       {{"id", 'i'},
        {"workload_id", 'i'},
        {"target_id", 'i'},
        {"schedule", 't'},
        {"schedule_key", 't'},
        {"status", 't'},
        {"error", 't'},
        {"time_us", 'd'},
        {"repeats", 't'},
        {"profile", 't'},
        {"worker", 't'},
        {"job", 't'},
        {"tool_version", 't'},
        {"created_at", 'i'}}},
      {"models",
       {{"id", 'i'},
        {"target_id", 'i'},
        {"kind", 't'},
        {"feature_version", 'i'},
        {"blob", 'b'},
        {"n_records", 'i'},
        {"metrics", 't'},
        {"created_at", 'i'}}},
      {"jobs",
       {{"id", 'i'},
        {"name", 't'},
        {"spec", 't'},
        {"state", 't'},
        {"progress", 'd'},
        {"created_at", 'i'},
        {"updated_at", 'i'}}},
      {"job_tasks", {{"job_id", 'i'}, {"task", 't'}, {"state", 't'}, {"updated_at", 'i'}}, false},
  };
  return all;
}

std::string column_list(const TableCopy& t) {
  std::string s;
  for (const auto& [name, kind] : t.columns) s += (s.empty() ? "" : ", ") + std::string(name);
  return s;
}

// Copies one table in pages of 2048 rows (by id where it has one); returns the rows copied.
std::int64_t copy_table(Connection& from, Connection& to, const TableCopy& t) {
  const std::string cols = column_list(t);
  std::string placeholders;
  for (std::size_t i = 1; i <= t.columns.size(); ++i) placeholders += (i > 1 ? ", ?" : "?") + std::to_string(i);
  const std::string select = "SELECT " + cols + " FROM " + t.name +
                             (t.has_id ? " WHERE id > ?1 ORDER BY id LIMIT 2048" : " ORDER BY job_id, task");
  const std::string insert = "INSERT INTO " + std::string(t.name) + "(" + cols + ") VALUES(" + placeholders + ")";
  std::int64_t copied = 0;
  std::int64_t after = -1;
  for (bool more = true; more;) {
    auto src = from.prepare(select);
    if (t.has_id) src->bind(1, after);
    auto dst = to.prepare(insert);
    std::int64_t n = 0;
    while (src->step()) {
      for (std::size_t c = 0; c < t.columns.size(); ++c) {
        const int col = static_cast<int>(c);
        switch (t.columns[c].second) {
          case 'i':
            dst->bind(col + 1, src->column_int64(col));
            break;
          case 'd':
            dst->bind(col + 1, src->column_double(col));
            break;
          case 'b':
            dst->bind_blob(col + 1, src->column_blob(col));
            break;
          default:
            dst->bind(col + 1, src->column_text(col));
            break;
        }
      }
      dst->run();
      dst->reset();
      if (t.has_id) after = src->column_int64(0);
      ++n;
    }
    copied += n;
    more = t.has_id && n == 2048;
  }
  // Rows inserted with their ids leave a PostgreSQL identity sequence behind them.
  if (t.has_id && to.dialect() == Dialect::postgres && copied > 0) {
    to.query_int("SELECT setval(pg_get_serial_sequence('" + std::string(t.name) + "', 'id'), (SELECT max(id) FROM " +
                 t.name + "))");
  }
  return copied;
}

}  // namespace

MergeReport TuningDatabase::copy_from(const std::string& source) {
  OpenOptions ro;
  ro.read_only = true;
  ro.must_exist = true;
  const TuningDatabase other = open(source, ro);
  if (other.schema_version() != kSchemaVersion) {
    throw_bad_input(source + " has schema version " + std::to_string(other.schema_version()) + ", not " +
                    std::to_string(kSchemaVersion) +
                    "; open it once writable (atvoss-db check) to migrate it "
                    "in place, then copy it");
  }
  const Stats here = stats();
  if (here.targets + here.workloads + here.records + here.models + here.jobs > 0) {
    throw_bad_input(path_ + " is not empty; copy into an empty database, or use merge to add " + source +
                    "'s records to this one");
  }
  return conn_->write([&] {
    MergeReport report;
    for (const TableCopy& t : tables()) {
      const std::int64_t n = copy_table(*other.conn_, *conn_, t);
      if (std::string_view(t.name) == "records") report.added = n;
      if (std::string_view(t.name) == "models") report.models = n;
      if (std::string_view(t.name) == "jobs") report.jobs = n;
    }
    return report;
  });
}

}  // namespace atvoss::db
