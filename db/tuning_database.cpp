// TuningDatabase implementation: opening a file (check_file_header, configure,
// check_identity, upgrade), targets and workloads, and the operations over every store
// (stats, merge, import, export, prune, check). The row codecs and the Writer are in
// db/internal/rows.hpp; the stores in their own files.
#include "db/tuning_database.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <istream>
#include <ostream>
#include <unordered_map>

#include "core/error.hpp"
#include "core/result_check.hpp"
#include "core/user_paths.hpp"
#include "db/internal/compact_json.hpp"
#include "db/internal/rows.hpp"
#include "db/internal/schema.hpp"
#include "db/internal/sql.hpp"
#include "db/postgres_url.hpp"

namespace atvoss::db {

using rows::count;
using rows::is_memory;
using rows::Writer;

// ---- lifetime ----------------------------------------------------------------------

TuningDatabase::TuningDatabase(std::string path, std::unique_ptr<Connection> conn)
    : path_(std::move(path)),
      conn_(std::move(conn)),
      cache_(std::make_unique<rows::DecodeCache>()),
      records_(std::make_unique<SqlRecordStore>(*conn_, *cache_)),
      models_(std::make_unique<ModelStore>(*conn_)),
      jobs_(std::make_unique<JobStore>(*conn_)) {}
TuningDatabase::TuningDatabase(TuningDatabase&&) noexcept = default;
TuningDatabase& TuningDatabase::operator=(TuningDatabase&&) noexcept = default;
TuningDatabase::~TuningDatabase() = default;

TuningDatabase TuningDatabase::open(const std::string& path, const OpenOptions& options) {
  if (path.empty())
    throw_bad_input("database path must not be empty (use \":memory:\" for a private in-memory database)");
  return is_postgres_url(path) ? open_postgres(path, options) : open_sqlite(path, options);
}

int TuningDatabase::schema_version() const {
  return static_cast<int>(conn_->read([&] { return stored_schema_version(*conn_); }));
}

// ---- records -----------------------------------------------------------------------

// ---- targets and workloads -----------------------------------------------------------

namespace {
std::vector<TargetInfo> read_targets(Connection& c, std::string_view where, const std::optional<std::string>& arg) {
  auto s = c.prepare("SELECT key, name, description FROM targets " + std::string(where));
  if (arg) s->bind(1, *arg);
  std::vector<TargetInfo> out;
  while (s->step()) {
    out.push_back(TargetInfo{s->column_text(0), s->column_text(1), parse_json(s->column_text(2), "stored target")});
  }
  return out;
}
}  // namespace

std::vector<TargetInfo> TuningDatabase::targets() const {
  return conn_->read([&] { return read_targets(*conn_, "ORDER BY name, key", std::nullopt); });
}

std::optional<TargetInfo> TuningDatabase::target(const std::string& key) const {
  auto found = conn_->read([&] { return read_targets(*conn_, "WHERE key = ?1", key); });
  if (found.empty()) return std::nullopt;
  return found.front();
}

std::vector<TargetInfo> TuningDatabase::targets_named(const std::string& name) const {
  return conn_->read([&] { return read_targets(*conn_, "WHERE name = ?1 ORDER BY key", name); });
}

std::optional<Workload> TuningDatabase::workload(const std::string& key) const {
  return conn_->read([&]() -> std::optional<Workload> {
    auto s = conn_->prepare("SELECT description FROM workloads WHERE key = ?1");
    s->bind(1, key);
    if (!s->step()) return std::nullopt;
    return Workload::from_json(parse_json(s->column_text(0), "stored workload"));
  });
}

// ---- models ------------------------------------------------------------------------

// ---- maintenance -------------------------------------------------------------------

Stats TuningDatabase::stats() const {
  return conn_->read([&] {
    Stats st;
    Connection& c = *conn_;
    st.schema_version = static_cast<int>(stored_schema_version(c));
    st.targets = c.query_int("SELECT count(*) FROM targets");
    st.workloads = c.query_int("SELECT count(*) FROM workloads");
    st.records = c.query_int("SELECT count(*) FROM records");
    if (st.schema_version >= 2) {  // a version-1 file opened read-only has neither table
      st.models = c.query_int("SELECT count(*) FROM models");
      st.jobs = c.query_int("SELECT count(*) FROM jobs");
    }
    {
      auto s = c.prepare("SELECT status, count(*) FROM records GROUP BY status ORDER BY status");
      while (s->step()) st.by_status.emplace_back(s->column_text(0), s->column_int64(1));
    }
    auto s = c.prepare(
        "SELECT t.key, t.name, t.description, count(DISTINCT r.workload_id), count(r.id), "
        "coalesce(sum(CASE WHEN r.status = 'ok' THEN 1 ELSE 0 END), 0) FROM targets t LEFT JOIN records r ON "
        "r.target_id = t.id "
        "GROUP BY t.id ORDER BY t.name, t.key");
    while (s->step()) {
      TargetStats ts;
      ts.target = TargetInfo{s->column_text(0), s->column_text(1), parse_json(s->column_text(2), "stored target")};
      ts.workloads = s->column_int64(3);
      ts.records = s->column_int64(4);
      ts.ok = s->column_int64(5);
      ts.failed = ts.records - ts.ok;
      st.per_target.push_back(std::move(ts));
    }
    if (c.dialect() == Dialect::postgres) {
      st.file_bytes = c.query_int("SELECT pg_database_size(current_database())");
    } else if (!is_memory(path_)) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(path_, ec);
      const auto wal = std::filesystem::file_size(path_ + "-wal", ec);
      st.file_bytes = static_cast<std::int64_t>(size) + (ec ? 0 : static_cast<std::int64_t>(wal));
    }
    return st;
  });
}

namespace {

// Validates r as import_jsonl documents; a bad_input is re-thrown prefixed with `where`.
void validate_import(const Record& r, const RecordCheck& check, const std::string& where) {
  try {
    check_result(r.measurement);
    r.target.check();
    if (check) check(r.workload, r.target.description, r.schedule, r.measurement);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::bad_input) throw;
    throw_bad_input(where + ": " + e.what());
  }
}

}  // namespace

MergeReport TuningDatabase::import_records(std::span<const Record> records, const std::string& what,
                                           const RecordCheck& check) {
  for (std::size_t i = 0; i < records.size(); ++i) {
    rows::reject_infrastructure(records[i]);
    validate_import(records[i], check, what + ": record " + std::to_string(i + 1));
  }
  return conn_->write([&] {
    MergeReport report;
    Writer w(*conn_);
    const std::int64_t now = now_ms();
    for (const auto& [id, outcome] : w.put_all(records, now)) count(report, outcome);
    return report;
  });
}

namespace {

// Copies the models of target t from theirs, skipping one already present (same target,
// kind, created_at and training-set size: a model merged before).
void merge_models(Connection& mine, Connection& theirs, Writer& w, const TargetInfo& t, MergeReport& report) {
  auto listed = theirs.prepare(std::string(rows::kModelSelect) + "WHERE t.key = ?1 ORDER BY m.id");
  listed->bind(1, t.key);
  while (listed->step()) {
    const ModelRecord m = rows::decode_model(*listed, true);
    auto dup = mine.prepare(
        "SELECT 1 FROM models m JOIN targets t ON t.id = m.target_id "
        "WHERE t.key = ?1 AND m.kind = ?2 AND m.created_at = ?3 AND m.n_records = ?4");
    dup->bind(1, t.key).bind(2, m.kind).bind(3, m.created_at_ms).bind(4, m.n_records);
    if (dup->step()) continue;
    auto ins = mine.prepare(
        "INSERT INTO models(target_id, kind, feature_version, blob, n_records, "
        "metrics, created_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    ins->bind(1, w.target_id(t)).bind(2, m.kind).bind(3, m.feature_version).bind_blob(4, m.blob);
    ins->bind(5, m.n_records).bind(6, m.metrics.dump()).bind(7, m.created_at_ms).run();
    ++report.models;
  }
}

// Copies jobs whose name is new here; a job of the same name is this file's own job.
void merge_jobs(Connection& mine, const std::vector<JobRow>& jobs, MergeReport& report) {
  for (const JobRow& j : jobs) {
    auto ins = mine.prepare(
        "INSERT INTO jobs(name, spec, state, progress, created_at, updated_at) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(name) DO NOTHING");
    ins->bind(1, j.name).bind(2, j.spec.dump()).bind(3, j.state).bind(4, j.progress);
    ins->bind(5, j.created_at_ms).bind(6, j.updated_at_ms).run();
    report.jobs += mine.changes();
  }
}

}  // namespace

MergeReport TuningDatabase::merge_from(const std::string& other_path) {
  OpenOptions ro;
  ro.read_only = true;
  ro.must_exist = true;
  const TuningDatabase other = open(other_path, ro);
  const bool has_models_and_jobs = other.schema_version() >= 2;  // version 1 files have neither
  const std::vector<TargetInfo> targets = other.targets();
  const std::vector<JobRow> jobs = has_models_and_jobs ? other.jobs().all() : std::vector<JobRow>{};
  return conn_->write([&] {
    MergeReport report;
    Writer w(*conn_);
    const std::int64_t now = now_ms();
    for (const TargetInfo& t : targets) {
      w.target_id(t);  // targets without records still carry their description
      other.records().for_each_record(t.key, [&](const Record& r) {
        count(report, w.put(r, now).second);
        return true;
      });
      if (has_models_and_jobs) merge_models(*conn_, *other.conn_, w, t, report);
    }
    merge_jobs(*conn_, jobs, report);
    return report;
  });
}

std::int64_t TuningDatabase::export_jsonl(std::ostream& out, const RecordFilter& filter) const {
  std::int64_t n = 0;
  const auto write = [&](const Record& r) {
    out << r.to_json().dump() << '\n';
    ++n;
    return true;
  };
  if (filter.target_key && !filter.workload_key && !filter.op && !filter.status && !filter.since_ms &&
      filter.limit == 0) {
    records_->for_each_record(*filter.target_key, write);  // streams: exports of any size
  } else if (!filter.target_key && !filter.workload_key && !filter.op && !filter.status && !filter.since_ms &&
             filter.limit == 0) {
    for (const TargetInfo& t : targets()) records_->for_each_record(t.key, write);
  } else {
    auto found = records_->query(filter);
    std::reverse(found.begin(), found.end());  // oldest first, like the streamed exports
    for (const Record& r : found) write(r);
  }
  if (!out) throw Error(ErrorKind::io, "export: write failed");
  return n;
}

namespace {

// One JSON line as a Record; bad_input prefixed with "<what>:<line>".
Record parse_record_line(const std::string& line, const std::string& where) {
  try {
    return Record::from_json(parse_json(line, where));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::bad_input) throw;
    const std::string msg = e.what();
    throw_bad_input(msg.rfind(where, 0) == 0 ? msg : where + ": " + msg);
  }
}

}  // namespace

MergeReport TuningDatabase::import_jsonl(std::istream& in, const std::string& what, const RecordCheck& check) {
  // Streams line by line inside one write transaction, so an export of any size imports in
  // bounded memory, and a bad line anywhere rolls everything back.
  bool consumed = false;
  return conn_->write([&] {
    // A retry would re-read a stream that is already used up. With BEGIN IMMEDIATE the lock
    // is held from the first line on, so this is a guard, not an expected path.
    if (consumed) {
      throw Error(ErrorKind::io, what +
                                     ": the database was busy mid-import; nothing was imported, "
                                     "run the import again");
    }
    consumed = true;
    MergeReport report;
    Writer w(*conn_);
    const std::int64_t now = now_ms();
    std::string line;
    for (std::int64_t n = 1; std::getline(in, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::string where = what + ":" + std::to_string(n);
      const Record r = parse_record_line(line, where);
      validate_import(r, check, where);
      count(report, w.put(r, now).second);
    }
    if (in.bad()) throw Error(ErrorKind::io, what + ": read failed");
    return report;
  });
}

std::int64_t TuningDatabase::prune(int k, bool keep_failed) {
  if (k < 1) throw_bad_input("prune: k must be at least 1, got " + std::to_string(k));
  return conn_->write([&] {
    auto s = conn_->prepare(
        "DELETE FROM records WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER "
        "(PARTITION BY workload_id, target_id ORDER BY time_us, id) AS rank FROM records "
        "WHERE status = 'ok') AS ranked WHERE rank > ?1)");
    s->bind(1, k).run();
    std::int64_t deleted = conn_->changes();
    if (!keep_failed) {
      auto f = conn_->prepare("DELETE FROM records WHERE status <> 'ok'");
      f->run();
      deleted += conn_->changes();
    }
    return deleted;
  });
}

namespace {

// What atvoss can check of a server database: PostgreSQL enforces the foreign keys and
// checksums its own pages (pg_amcheck checks those), so this checks atvoss's own rules:
// one schema row, and every record's key is the key of the schedule stored in it.
std::string postgres_problems(Connection& c) {
  std::string problems;
  if (c.query_int("SELECT count(*) FROM atvoss_schema") != 1) problems += "atvoss_schema must hold one row\n";
  auto s = c.prepare("SELECT id, schedule, schedule_key FROM records ORDER BY id");
  while (s->step()) {
    char key[17];
    rows::schedule_key(s->column_text(1), key);
    if (s->column_text(2) != key) {
      problems += "record " + std::to_string(s->column_int64(0)) + ": schedule_key does not match its schedule\n";
    }
  }
  return problems;
}

}  // namespace

std::string TuningDatabase::integrity_check() const {
  return conn_->read([&] {
    std::string problems;
    if (conn_->dialect() == Dialect::postgres) {
      problems = postgres_problems(*conn_);
      if (problems.empty()) return std::string("ok");
      problems.pop_back();
      return problems;
    }
    {
      auto s = conn_->prepare("PRAGMA integrity_check");
      while (s->step()) {
        const std::string row = s->column_text(0);
        if (row != "ok") problems += row + "\n";
      }
    }
    auto fk = conn_->prepare("PRAGMA foreign_key_check");
    while (fk->step()) {
      problems += "foreign key violation in table " + fk->column_text(0) + " row " +
                  std::to_string(fk->column_int64(1)) + " (refers to " + fk->column_text(2) + ")\n";
    }
    if (problems.empty()) return std::string("ok");
    problems.pop_back();
    return problems;
  });
}

void TuningDatabase::vacuum() {
  conn_->read([&] { conn_->exec("VACUUM"); });
}

}  // namespace atvoss::db
