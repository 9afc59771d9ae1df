// TuningDatabase implementation. Map of this file:
//   open()            -> open_connection(), configure(), check_identity(), upgrade()
//   RowDecoder        turns a records row (kRecordSelect columns) into a Record, using the
//                     per-database cache of parsed workload and target rows
//   Writer            everything that writes inside one transaction: target/workload ids,
//                     put() = insert-or-combine of one record (the MergeReport rules)
//   public methods    each is one Connection::read() or write() around the pieces above
#include "db/tuning_database.hpp"

#include <sqlite3.h>

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
#include "db/compact_json.hpp"
#include "db/schema.hpp"
#include "db/sqlite.hpp"

namespace atvoss::db {
namespace {

constexpr std::string_view kRecordSelect =
    "SELECT r.id, r.workload_id, w.description, r.target_id, t.key, t.name, t.description, "
    "r.schedule, r.status, r.error, r.time_us, r.repeats, r.profile, r.worker, r.job, "
    "r.tool_version, r.created_at "
    "FROM records r JOIN workloads w ON w.id = r.workload_id JOIN targets t ON t.id = r.target_id ";

// status = 'ok' spelled exactly as in the partial index records_best, so the planner uses it.
constexpr std::string_view kBestTail =
    "WHERE w.key = ?1 AND t.key = ?2 AND r.status = 'ok' ORDER BY r.time_us, r.id LIMIT ?3";

std::string sql(std::string_view tail) { return std::string(kRecordSelect) + std::string(tail); }

std::vector<double> parse_repeats(const std::string& text) {
  if (auto fast = read_repeats(text)) return std::move(*fast);
  std::vector<double> out;
  const Json j = parse_json(text, "stored repeats");
  for (const auto& v : j) out.push_back(v.get<double>());
  return out;
}

std::string dump_repeats(const std::vector<double>& repeats) {
  if (auto fast = write_repeats(repeats)) return std::move(*fast);
  return Json(repeats).dump();
}

std::string dump_profile(const Profile& p) {
  if (auto fast = write_profile(p)) return std::move(*fast);
  return p.to_json().dump();
}

// Exactly Schedule::to_json().dump(): the schedule key is a hash of these bytes.
std::string dump_schedule(const Schedule& s) {
  if (auto fast = write_schedule(s)) return std::move(*fast);
  return s.to_json().dump();
}

Schedule parse_schedule(const std::string& text) {
  if (auto fast = read_schedule(text)) return std::move(*fast);
  return Schedule::from_json(parse_json(text, "stored schedule"));
}

Profile parse_profile(const std::string& text) {
  if (auto fast = read_profile(text)) return *fast;
  return Profile::from_json(parse_json(text, "stored profile"));
}

using WorkloadCache = std::unordered_map<std::int64_t, Workload>;
using TargetCache = std::unordered_map<std::int64_t, TargetInfo>;

class RowDecoder {
 public:
  RowDecoder(WorkloadCache& workloads, TargetCache& targets) : workloads_(workloads), targets_(targets) {
    // Bounded: a process that streams millions of distinct workloads must not grow forever.
    if (workloads_.size() > 100000) workloads_.clear();
    if (targets_.size() > 10000) targets_.clear();
  }

  Record decode(const Statement& s) {
    Record r;
    r.id = s.column_int64(0);
    r.workload = workload(s.column_int64(1), s, 2);
    r.target = target(s.column_int64(3), s);
    r.schedule = parse_schedule(s.column_text(7));
    Measurement& m = r.measurement;
    m.status = parse_status(s.column_text(8));
    m.message = s.column_text(9);
    m.time_us = s.column_double(10);
    m.repeats = parse_repeats(s.column_text(11));
    m.profile = parse_profile(s.column_text(12));
    r.worker = s.column_text(13);
    r.job = s.column_text(14);
    r.tool_version = s.column_text(15);
    r.created_at_ms = s.column_int64(16);
    return r;
  }

  const Workload& workload(std::int64_t id, const Statement& s, int col) {
    auto it = workloads_.find(id);
    if (it == workloads_.end()) {
      it = workloads_.emplace(id, Workload::from_json(parse_json(s.column_text(col), "stored workload"))).first;
    }
    return it->second;
  }

 private:
  const TargetInfo& target(std::int64_t id, const Statement& s) {
    auto it = targets_.find(id);
    if (it == targets_.end()) {
      TargetInfo t{s.column_text(4), s.column_text(5), parse_json(s.column_text(6), "stored target")};
      it = targets_.emplace(id, std::move(t)).first;
    }
    return it->second;
  }

  WorkloadCache& workloads_;
  TargetCache& targets_;
};

// True if every value of part occurs in whole at least as often (multiset inclusion), so
// that merging the same file twice does not append its repeats twice.
bool contains_all(std::vector<double> whole, std::vector<double> part) {
  std::sort(whole.begin(), whole.end());
  std::sort(part.begin(), part.end());
  return std::includes(whole.begin(), whole.end(), part.begin(), part.end());
}

enum class Outcome { added, identical, combined, conflict };

void count(MergeReport& report, Outcome o) {
  switch (o) {
    case Outcome::added: ++report.added; break;
    case Outcome::identical: ++report.identical; break;
    case Outcome::combined: ++report.combined; break;
    case Outcome::conflict: ++report.conflicts; break;
  }
}

void reject_infrastructure(const Record& r) {
  if (is_infrastructure_error(r.measurement.status)) {
    throw Error(ErrorKind::internal,
                "insert: status '" + std::string(to_string(r.measurement.status)) +
                    "' is an infrastructure error, not a result of the schedule; retry the "
                    "candidate instead of storing it (workload " + r.workload.key() + ")");
  }
}

// Writes inside the caller's transaction. Id caches live only as long as the transaction,
// so a rollback can never leave a cached id that no longer exists.
class Writer {
 public:
  explicit Writer(Connection& c) : c_(c) {}

  std::int64_t target_id(const TargetInfo& t) {
    auto it = targets_.find(t.key);
    if (it != targets_.end()) return it->second;
    {
      auto ins = c_.prepare("INSERT INTO targets(key, name, description) VALUES(?1, ?2, ?3) "
                            "ON CONFLICT(key) DO NOTHING");
      ins->bind(1, t.key).bind(2, t.name).bind(3, t.description.dump()).run();
    }
    auto sel = c_.prepare("SELECT id FROM targets WHERE key = ?1");
    sel->bind(1, t.key);
    if (!sel->step()) throw Error(ErrorKind::internal, "target " + t.key + " vanished after insert");
    return targets_[t.key] = sel->column_int64(0);
  }

  std::int64_t workload_id(const Workload& w) {
    auto it = workloads_.find(w.key());
    if (it != workloads_.end()) return it->second;
    {
      auto ins = c_.prepare("INSERT INTO workloads(key, op, description) VALUES(?1, ?2, ?3) "
                            "ON CONFLICT(key) DO NOTHING");
      ins->bind(1, w.key()).bind(2, w.op()).bind(3, w.to_json().dump()).run();
    }
    auto sel = c_.prepare("SELECT id FROM workloads WHERE key = ?1");
    sel->bind(1, w.key());
    if (!sel->step()) throw Error(ErrorKind::internal, "workload " + w.key() + " vanished after insert");
    return workloads_[w.key()] = sel->column_int64(0);
  }

  // Inserts r, or combines it into the row that has its key. Returns the row id.
  std::pair<std::int64_t, Outcome> put(const Record& r, std::int64_t now) {
    reject_infrastructure(r);
    const std::int64_t wid = workload_id(r.workload);
    const std::int64_t tid = target_id(r.target);
    const std::string schedule_text = dump_schedule(r.schedule);
    char key[17];
    std::snprintf(key, sizeof key, "%016llx",
                  static_cast<unsigned long long>(fnv1a64(schedule_text)));
    const Measurement& m = r.measurement;
    const std::string repeats = dump_repeats(m.repeats);
    const std::string profile = m.ok() ? dump_profile(m.profile) : std::string("{}");
    {
      auto ins = c_.prepare(
          "INSERT INTO records(workload_id, target_id, schedule, schedule_key, status, error, "
          "time_us, repeats, profile, worker, job, tool_version, created_at) "
          "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) "
          "ON CONFLICT(workload_id, target_id, schedule_key) DO NOTHING");
      // Static binds: every string here outlives the step() below (hot path, no copies).
      ins->bind(1, wid).bind(2, tid).bind_static(3, schedule_text).bind_static(4, std::string_view(key, 16));
      ins->bind_static(5, to_string(m.status)).bind_static(6, m.message);
      ins->bind(7, m.ok() ? m.time_us : 0.0).bind_static(8, repeats).bind_static(9, profile);
      ins->bind_static(10, r.worker).bind_static(11, r.job).bind_static(12, r.tool_version);
      ins->bind(13, r.created_at_ms != 0 ? r.created_at_ms : now);
      // Not RETURNING: SQLite buffers RETURNING rows in a temporary table, which costs
      // more than the insert itself on this hot path.
      ins->run();
      if (c_.changes() == 1) return {c_.last_insert_rowid(), Outcome::added};
    }
    return combine(wid, tid, std::string_view(key, 16), r);
  }

 private:
  // The key exists: apply the MergeReport rules to the stored row.
  std::pair<std::int64_t, Outcome> combine(std::int64_t wid, std::int64_t tid,
                                           std::string_view key, const Record& r) {
    auto sel = c_.prepare("SELECT id, status, time_us, repeats FROM records "
                          "WHERE workload_id = ?1 AND target_id = ?2 AND schedule_key = ?3");
    sel->bind(1, wid).bind(2, tid).bind(3, key);
    if (!sel->step()) throw Error(ErrorKind::internal, "record key vanished during insert");
    const std::int64_t id = sel->column_int64(0);
    const Status old_status = parse_status(sel->column_text(1));
    std::vector<double> repeats = parse_repeats(sel->column_text(3));
    const double old_time = sel->column_double(2);
    const Measurement& m = r.measurement;
    if (old_status != m.status) {
      // A success proves the schedule runs; a failure beside it was likely transient.
      if (m.ok()) overwrite(id, r);
      return {id, Outcome::conflict};
    }
    if (contains_all(repeats, m.repeats)) return {id, Outcome::identical};
    repeats.insert(repeats.end(), m.repeats.begin(), m.repeats.end());
    const double time = m.ok() ? median(repeats) : 0.0;
    auto upd = c_.prepare("UPDATE records SET repeats = ?2, time_us = ?3 WHERE id = ?1");
    upd->bind(1, id).bind(2, dump_repeats(repeats)).bind(3, time > 0 || !m.ok() ? time : old_time).run();
    return {id, Outcome::combined};
  }

  void overwrite(std::int64_t id, const Record& r) {
    const Measurement& m = r.measurement;
    auto upd = c_.prepare("UPDATE records SET status = ?2, error = ?3, time_us = ?4, repeats = ?5, "
                          "profile = ?6, worker = ?7, job = ?8, tool_version = ?9 WHERE id = ?1");
    upd->bind(1, id).bind(2, to_string(m.status)).bind(3, m.message).bind(4, m.time_us);
    upd->bind(5, dump_repeats(m.repeats)).bind(6, dump_profile(m.profile));
    upd->bind(7, r.worker).bind(8, r.job).bind(9, r.tool_version).run();
  }

  Connection& c_;
  std::unordered_map<std::string, std::int64_t> targets_;
  std::unordered_map<std::string, std::int64_t> workloads_;
};

bool is_memory(const std::string& path) { return path == ":memory:"; }

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// Cheap checks on the 100-byte SQLite header before SQLite touches the file: a file that
// is not SQLite at all, or one cut short (fewer bytes than the page count its header
// vouches for), is refused with a clear message instead of failing later, mid-query.
// Skipped while a non-empty WAL exists: then the header may legitimately run ahead of a
// checkpoint that recovery will finish.
void check_file_header(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size == 0) return;  // absent or empty: SQLite creates a fresh database
  const auto wal = std::filesystem::file_size(path + "-wal", ec);
  const bool wal_pending = !ec && wal > 0;
  unsigned char h[100] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return;  // let SQLite report the permission problem
  const std::size_t got = std::fread(h, 1, sizeof h, f);
  std::fclose(f);
  if (got < sizeof h || std::memcmp(h, "SQLite format 3", 16) != 0) {
    throw Error(ErrorKind::corrupt, path + " is not an atvoss tuning database: it is not an SQLite "
                                           "file (damaged, truncated or a different kind of file)");
  }
  const std::uint32_t raw_page = (std::uint32_t{h[16]} << 8) | h[17];
  const std::uint64_t page_size = raw_page == 1 ? 65536 : raw_page;
  const std::uint32_t pages = be32(h + 28);
  const bool count_valid = be32(h + 24) == be32(h + 92) && pages > 0;
  if (!wal_pending && count_valid && size < page_size * pages) {
    throw Error(ErrorKind::corrupt, path + " is truncated: its header records " + std::to_string(pages) +
                                        " pages of " + std::to_string(page_size) + " bytes but the file has " +
                                        std::to_string(size) + " bytes; restore it from a copy");
  }
}

void configure(Connection& c, const std::string& path, bool read_only, bool sync_every_commit) {
  c.exec("PRAGMA foreign_keys = ON");
  // 64 MiB page cache (default 2 MiB): the record indexes of a million-record file stay in
  // memory, which keeps batch inserts and best-k lookups off the file system.
  c.exec("PRAGMA cache_size = -65536");
  // Read pages through a 1 GiB memory map instead of a pread() and a copy each: a best-k
  // query of a large file touches pages no connection has cached yet. Writes still go
  // through the WAL (SQLite writes via the map only if built with SQLITE_MMAP_READWRITE),
  // so durability is unchanged.
  if (!is_memory(path)) c.exec("PRAGMA mmap_size = 1073741824");
  if (!read_only && !is_memory(path)) {
    // journal_mode needs a brief lock when a file is new; another opener may hold it.
    c.read([&] { c.exec("PRAGMA journal_mode = WAL"); });
    // OpenOptions::sync_every_commit documents the trade-off.
    c.exec(sync_every_commit ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    // Checkpoint every ~16 MiB of WAL instead of 4 MiB: index pages that many batches touch
    // are copied into the file once per checkpoint, so fewer checkpoints mean less writing.
    c.exec("PRAGMA wal_autocheckpoint = 4000");
  }
}

// Refuses SQLite files that belong to another application, before anything is written.
void check_identity(Connection& c, const std::string& path) {
  const auto app = c.read([&] { return c.query_int("PRAGMA application_id"); });
  if (app != 0 && app != kApplicationId) {
    throw_bad_input(path + " is an SQLite database of another application (application_id " +
                    std::to_string(app) + "), not an atvoss tuning database");
  }
  if (app == 0 && c.query_int("PRAGMA user_version") == 0 &&
      c.query_int("SELECT count(*) FROM sqlite_schema") > 0) {
    throw_bad_input(path + " is an SQLite database without atvoss tables; refusing to add them to it");
  }
}

void refuse_newer(const std::string& path, std::int64_t version) {
  if (version > TuningDatabase::kSchemaVersion) {
    throw_bad_input(path + " has schema version " + std::to_string(version) +
                    ", newer than this build of atvoss understands (" +
                    std::to_string(TuningDatabase::kSchemaVersion) +
                    "); upgrade atvoss to open it (the file was left untouched)");
  }
}

void upgrade(Connection& c, const std::string& path, bool read_only) {
  const auto version = c.read([&] { return c.query_int("PRAGMA user_version"); });
  if (read_only && version == 0) {
    throw_bad_input(path + " is not an atvoss tuning database (no schema); open it writable to create one");
  }
  if (version == TuningDatabase::kSchemaVersion || read_only) return;
  c.write([&] {
    // Re-read inside the write lock: another process may have migrated meanwhile.
    const auto now = c.query_int("PRAGMA user_version");
    refuse_newer(path, now);
    migrate(c, static_cast<int>(now), TuningDatabase::kSchemaVersion);
  });
}

ModelRecord decode_model(const Statement& s, bool with_blob) {
  ModelRecord m;
  m.id = s.column_int64(0);
  m.target_key = s.column_text(1);
  m.kind = s.column_text(2);
  m.feature_version = static_cast<int>(s.column_int64(3));
  if (with_blob) m.blob = s.column_blob(4);
  m.n_records = s.column_int64(5);
  m.metrics = parse_json(s.column_text(6), "stored model metrics");
  m.created_at_ms = s.column_int64(7);
  return m;
}

Job decode_job(const Statement& s) {
  Job j;
  j.id = s.column_int64(0);
  j.name = s.column_text(1);
  j.spec = parse_json(s.column_text(2), "stored job spec");
  j.state = s.column_text(3);
  j.progress = s.column_double(4);
  j.created_at_ms = s.column_int64(5);
  j.updated_at_ms = s.column_int64(6);
  return j;
}

constexpr std::string_view kJobSelect =
    "SELECT id, name, spec, state, progress, created_at, updated_at FROM jobs ";
constexpr std::string_view kModelSelect =
    "SELECT m.id, t.key, m.kind, m.feature_version, m.blob, m.n_records, m.metrics, m.created_at "
    "FROM models m JOIN targets t ON t.id = m.target_id ";

}  // namespace

// ---- lifetime ----------------------------------------------------------------------

struct TuningDatabase::DecodeCache {
  WorkloadCache workloads;
  TargetCache targets;
};

TuningDatabase::TuningDatabase(std::string path)
    : path_(std::move(path)), cache_(std::make_unique<DecodeCache>()) {}
TuningDatabase::TuningDatabase(TuningDatabase&&) noexcept = default;
TuningDatabase& TuningDatabase::operator=(TuningDatabase&&) noexcept = default;
TuningDatabase::~TuningDatabase() = default;

TuningDatabase TuningDatabase::open(const std::string& path, const OpenOptions& options) {
  if (path.empty()) throw_bad_input("database path must not be empty (use \":memory:\" for a private in-memory database)");
  const bool memory = is_memory(path);
  if (!memory && (options.must_exist || options.read_only) && !std::filesystem::exists(path)) {
    throw Error(ErrorKind::not_found, "database " + path + " does not exist");
  }
  if (!memory) require_output_file(path, "database");  // a directory, or no directory to create it in
  int flags = SQLITE_OPEN_NOMUTEX;  // one connection per thread: SQLite's own mutex is not needed
  flags |= options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!memory) check_file_header(path);
  TuningDatabase db(memory ? ":memory:" : path);
  db.conn_ = std::make_unique<Connection>(db.path_, flags, options.lock_wait_ms);
  Connection& c = *db.conn_;
  // Every refusal happens before configure(), whose journal_mode switch writes the header.
  check_identity(c, db.path_);  // the first read: a garbage file fails here, as corrupt
  const auto version = c.read([&] { return c.query_int("PRAGMA user_version"); });
  refuse_newer(db.path_, version);
  configure(c, db.path_, options.read_only, options.sync_every_commit);
  upgrade(c, db.path_, options.read_only);
  return db;
}

int TuningDatabase::schema_version() const {
  return static_cast<int>(conn_->read([&] { return conn_->query_int("PRAGMA user_version"); }));
}

// ---- records -----------------------------------------------------------------------

std::vector<std::int64_t> TuningDatabase::insert(std::span<const Record> batch) {
  for (const Record& r : batch) reject_infrastructure(r);  // before taking the write lock
  return conn_->write([&] {
    Writer w(*conn_);
    const std::int64_t now = now_ms();
    std::vector<std::int64_t> ids;
    ids.reserve(batch.size());
    for (const Record& r : batch) ids.push_back(w.put(r, now).first);
    return ids;
  });
}

void TuningDatabase::write_together(const std::function<void()>& body) { conn_->write(body); }

std::int64_t TuningDatabase::insert(const Record& record) {
  return insert(std::span<const Record>(&record, 1)).front();
}

std::optional<Record> TuningDatabase::find(const std::string& workload_key,
                                           const std::string& target_key,
                                           const std::string& schedule_key) const {
  return conn_->read([&]() -> std::optional<Record> {
    auto s = conn_->prepare(sql("WHERE w.key = ?1 AND t.key = ?2 AND r.schedule_key = ?3"));
    s->bind(1, workload_key).bind(2, target_key).bind(3, schedule_key);
    if (!s->step()) return std::nullopt;
    return RowDecoder(cache_->workloads, cache_->targets).decode(*s);
  });
}

bool TuningDatabase::contains(const std::string& workload_key, const std::string& target_key,
                              const std::string& schedule_key) const {
  return conn_->read([&] {
    auto s = conn_->prepare(
        "SELECT 1 FROM records r JOIN workloads w ON w.id = r.workload_id "
        "JOIN targets t ON t.id = r.target_id "
        "WHERE w.key = ?1 AND t.key = ?2 AND r.schedule_key = ?3");
    s->bind(1, workload_key).bind(2, target_key).bind(3, schedule_key);
    return s->step();
  });
}

std::vector<Record> TuningDatabase::best(const std::string& workload_key,
                                         const std::string& target_key, int k) const {
  if (k <= 0) return {};
  return conn_->read([&] {
    auto s = conn_->prepare(sql(kBestTail));
    s->bind(1, workload_key).bind(2, target_key).bind(3, k);
    RowDecoder dec(cache_->workloads, cache_->targets);
    std::vector<Record> out;
    while (s->step()) out.push_back(dec.decode(*s));
    return out;
  });
}

std::vector<BestEntry> TuningDatabase::best_schedules(const std::string& workload_key,
                                                     const std::string& target_key, int k) const {
  if (k <= 0) return {};
  return conn_->read([&] {
    auto s = conn_->prepare(
        "SELECT r.workload_id, w.description, r.schedule, r.time_us, r.id "
        "FROM records r JOIN workloads w ON w.id = r.workload_id JOIN targets t ON t.id = r.target_id " +
        std::string(kBestTail));
    s->bind(1, workload_key).bind(2, target_key).bind(3, k);
    RowDecoder dec(cache_->workloads, cache_->targets);
    std::vector<BestEntry> out;
    while (s->step()) {
      out.push_back(BestEntry{dec.workload(s->column_int64(0), *s, 1),
                              parse_schedule(s->column_text(2)),
                              s->column_double(3), s->column_int64(4)});
    }
    return out;
  });
}

std::string TuningDatabase::explain_best_plan() const {
  return conn_->read([&] {
    auto s = conn_->prepare("EXPLAIN QUERY PLAN " + sql(kBestTail));
    std::string plan;
    while (s->step()) plan += s->column_text(3) + "\n";
    return plan;
  });
}

std::vector<Record> TuningDatabase::history(const std::string& workload_key,
                                            const std::optional<std::string>& target_key) const {
  return conn_->read([&] {
    auto s = conn_->prepare(sql("WHERE w.key = ?1 AND (?2 IS NULL OR t.key = ?2) "
                                "ORDER BY r.created_at, r.id"));
    s->bind(1, workload_key);
    if (target_key) s->bind(2, *target_key);
    RowDecoder dec(cache_->workloads, cache_->targets);
    std::vector<Record> out;
    while (s->step()) out.push_back(dec.decode(*s));
    return out;
  });
}

void TuningDatabase::for_each_record(const std::string& target_key,
                                     const std::function<bool(const Record&)>& fn) const {
  // Pages by id rather than holding one statement open across fn, so fn may read this
  // database, and a retry after a busy error resumes where it stopped.
  std::int64_t after = 0;
  for (;;) {
    const auto page = conn_->read([&] {
      auto s = conn_->prepare(sql("WHERE t.key = ?1 AND r.id > ?2 ORDER BY r.id LIMIT 1024"));
      s->bind(1, target_key).bind(2, after);
      RowDecoder dec(cache_->workloads, cache_->targets);
      std::vector<Record> out;
      while (s->step()) out.push_back(dec.decode(*s));
      return out;
    });
    for (const Record& r : page) {
      if (!fn(r)) return;
      after = r.id;
    }
    if (page.size() < 1024) return;
  }
}

std::vector<Record> TuningDatabase::query(const RecordFilter& f) const {
  std::string where = "WHERE 1";
  if (f.target_key) where += " AND t.key = ?1";
  if (f.workload_key) where += " AND w.key = ?2";
  if (f.op) where += " AND w.op = ?3";
  if (f.status) where += " AND r.status = ?4";
  if (f.since_ms) where += " AND r.created_at >= ?5";
  where += " ORDER BY r.created_at DESC, r.id DESC";
  if (f.limit > 0) where += " LIMIT ?6";
  return conn_->read([&] {
    auto s = conn_->prepare(sql(where));
    if (f.target_key) s->bind(1, *f.target_key);
    if (f.workload_key) s->bind(2, *f.workload_key);
    if (f.op) s->bind(3, *f.op);
    if (f.status) s->bind(4, to_string(*f.status));
    if (f.since_ms) s->bind(5, *f.since_ms);
    if (f.limit > 0) s->bind(6, f.limit);
    RowDecoder dec(cache_->workloads, cache_->targets);
    std::vector<Record> out;
    while (s->step()) out.push_back(dec.decode(*s));
    return out;
  });
}

std::vector<BestEntry> TuningDatabase::best_per_workload(const std::string& target_key) const {
  return conn_->read([&] {
    // SQLite takes the bare columns of a min() aggregate from the row holding the minimum.
    auto s = conn_->prepare(
        "SELECT r.workload_id, w.description, r.schedule, min(r.time_us), r.id "
        "FROM records r JOIN workloads w ON w.id = r.workload_id "
        "WHERE r.target_id = (SELECT id FROM targets WHERE key = ?1) AND r.status = 'ok' "
        "GROUP BY r.workload_id ORDER BY w.key");
    s->bind(1, target_key);
    RowDecoder dec(cache_->workloads, cache_->targets);
    std::vector<BestEntry> out;
    while (s->step()) {
      BestEntry e{dec.workload(s->column_int64(0), *s, 1),
                  parse_schedule(s->column_text(2)),
                  s->column_double(3), s->column_int64(4)};
      out.push_back(std::move(e));
    }
    return out;
  });
}

// ---- targets and workloads -----------------------------------------------------------

namespace {
std::vector<TargetInfo> read_targets(Connection& c, std::string_view where,
                                     const std::optional<std::string>& arg) {
  auto s = c.prepare("SELECT key, name, description FROM targets " + std::string(where));
  if (arg) s->bind(1, *arg);
  std::vector<TargetInfo> out;
  while (s->step()) {
    out.push_back(TargetInfo{s->column_text(0), s->column_text(1),
                             parse_json(s->column_text(2), "stored target")});
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

std::int64_t TuningDatabase::save_model(const TargetInfo& target, const ModelRecord& model) {
  if (model.kind.empty()) throw_bad_input("save_model: field 'kind' must not be empty");
  return conn_->write([&] {
    Writer w(*conn_);
    auto s = conn_->prepare("INSERT INTO models(target_id, kind, feature_version, blob, n_records, "
                            "metrics, created_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id");
    s->bind(1, w.target_id(target)).bind(2, model.kind).bind(3, model.feature_version);
    s->bind_blob(4, model.blob).bind(5, model.n_records).bind(6, model.metrics.dump());
    s->bind(7, model.created_at_ms != 0 ? model.created_at_ms : now_ms());
    s->step();
    return s->column_int64(0);
  });
}

std::optional<ModelRecord> TuningDatabase::load_model(const std::string& target_key,
                                                      const std::string& kind,
                                                      std::optional<int> feature_version) const {
  return conn_->read([&]() -> std::optional<ModelRecord> {
    auto s = conn_->prepare(std::string(kModelSelect) +
                            "WHERE t.key = ?1 AND m.kind = ?2 AND (?3 IS NULL OR m.feature_version = ?3) "
                            "ORDER BY m.created_at DESC, m.id DESC LIMIT 1");
    s->bind(1, target_key).bind(2, kind);
    if (feature_version) s->bind(3, *feature_version);
    if (!s->step()) return std::nullopt;
    return decode_model(*s, true);
  });
}

std::vector<ModelRecord> TuningDatabase::list_models(const std::string& target_key) const {
  return conn_->read([&] {
    auto s = conn_->prepare(std::string(kModelSelect) +
                            "WHERE t.key = ?1 ORDER BY m.created_at DESC, m.id DESC");
    s->bind(1, target_key);
    std::vector<ModelRecord> out;
    while (s->step()) out.push_back(decode_model(*s, false));
    return out;
  });
}

// ---- jobs --------------------------------------------------------------------------

std::int64_t TuningDatabase::create_job(const std::string& name, const Json& spec) {
  if (name.empty()) throw_bad_input("create_job: a job name must not be empty");
  return conn_->write([&] {
    auto exists = conn_->prepare("SELECT 1 FROM jobs WHERE name = ?1");
    exists->bind(1, name);
    if (exists->step()) throw_bad_input("create_job: a job named '" + name + "' already exists");
    auto s = conn_->prepare("INSERT INTO jobs(name, spec, state, progress, created_at, updated_at) "
                            "VALUES(?1, ?2, 'pending', 0, ?3, ?3) RETURNING id");
    s->bind(1, name).bind(2, spec.dump()).bind(3, now_ms());
    s->step();
    return s->column_int64(0);
  });
}

std::optional<Job> TuningDatabase::job(std::int64_t id) const {
  return conn_->read([&]() -> std::optional<Job> {
    auto s = conn_->prepare(std::string(kJobSelect) + "WHERE id = ?1");
    s->bind(1, id);
    if (!s->step()) return std::nullopt;
    return decode_job(*s);
  });
}

std::optional<Job> TuningDatabase::job_named(const std::string& name) const {
  return conn_->read([&]() -> std::optional<Job> {
    auto s = conn_->prepare(std::string(kJobSelect) + "WHERE name = ?1");
    s->bind(1, name);
    if (!s->step()) return std::nullopt;
    return decode_job(*s);
  });
}

std::vector<Job> TuningDatabase::jobs() const {
  return conn_->read([&] {
    auto s = conn_->prepare(std::string(kJobSelect) + "ORDER BY id");
    std::vector<Job> out;
    while (s->step()) out.push_back(decode_job(*s));
    return out;
  });
}

void TuningDatabase::update_job(std::int64_t id, const std::string& state, double progress) {
  conn_->write([&] {
    auto s = conn_->prepare("UPDATE jobs SET state = ?2, progress = ?3, updated_at = ?4 WHERE id = ?1");
    s->bind(1, id).bind(2, state).bind(3, progress).bind(4, now_ms()).run();
    if (conn_->changes() == 0) {
      throw Error(ErrorKind::not_found, "update_job: no job with id " + std::to_string(id));
    }
  });
}

void TuningDatabase::update_job_spec(std::int64_t id, const Json& spec) {
  conn_->write([&] {
    auto s = conn_->prepare("UPDATE jobs SET spec = ?2, updated_at = ?3 WHERE id = ?1");
    s->bind(1, id).bind(2, spec.dump()).bind(3, now_ms()).run();
    if (conn_->changes() == 0) {
      throw Error(ErrorKind::not_found, "update_job_spec: no job with id " + std::to_string(id));
    }
  });
}

void TuningDatabase::save_job_task(std::int64_t job_id, const std::string& task, const Json& state) {
  conn_->write([&] {
    auto exists = conn_->prepare("SELECT 1 FROM jobs WHERE id = ?1");
    exists->bind(1, job_id);
    if (!exists->step()) {
      throw Error(ErrorKind::not_found, "save_job_task: no job with id " + std::to_string(job_id));
    }
    auto s = conn_->prepare("INSERT INTO job_tasks(job_id, task, state, updated_at) VALUES(?1, ?2, ?3, ?4) "
                            "ON CONFLICT(job_id, task) DO UPDATE SET state = ?3, updated_at = ?4");
    s->bind(1, job_id).bind(2, task).bind(3, state.dump()).bind(4, now_ms()).run();
  });
}

std::map<std::string, Json> TuningDatabase::job_tasks(std::int64_t job_id) const {
  return conn_->read([&] {
    auto s = conn_->prepare("SELECT task, state FROM job_tasks WHERE job_id = ?1");
    s->bind(1, job_id);
    std::map<std::string, Json> out;
    while (s->step()) {
      const std::string task(s->column_text(0));
      out[task] = parse_json(s->column_text(1), "stored state of job task " + task);
    }
    return out;
  });
}

bool TuningDatabase::delete_job(std::int64_t id) {
  return conn_->write([&] {
    auto s = conn_->prepare("DELETE FROM jobs WHERE id = ?1");
    s->bind(1, id).run();
    return conn_->changes() > 0;
  });
}

// ---- maintenance -------------------------------------------------------------------

Stats TuningDatabase::stats() const {
  return conn_->read([&] {
    Stats st;
    Connection& c = *conn_;
    st.schema_version = static_cast<int>(c.query_int("PRAGMA user_version"));
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
        "coalesce(sum(r.status = 'ok'), 0) FROM targets t LEFT JOIN records r ON r.target_id = t.id "
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
    if (!is_memory(path_)) {
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
    reject_infrastructure(records[i]);
    validate_import(records[i], check, what + ": record " + std::to_string(i + 1));
  }
  return conn_->write([&] {
    MergeReport report;
    Writer w(*conn_);
    const std::int64_t now = now_ms();
    for (const Record& r : records) count(report, w.put(r, now).second);
    return report;
  });
}

namespace {

// Copies the models of target t from theirs, skipping one already present (same target,
// kind, created_at and training-set size: a model merged before).
void merge_models(Connection& mine, Connection& theirs, Writer& w, const TargetInfo& t,
                  MergeReport& report) {
  auto listed = theirs.prepare(std::string(kModelSelect) + "WHERE t.key = ?1 ORDER BY m.id");
  listed->bind(1, t.key);
  while (listed->step()) {
    const ModelRecord m = decode_model(*listed, true);
    auto dup = mine.prepare("SELECT 1 FROM models m JOIN targets t ON t.id = m.target_id "
                            "WHERE t.key = ?1 AND m.kind = ?2 AND m.created_at = ?3 AND m.n_records = ?4");
    dup->bind(1, t.key).bind(2, m.kind).bind(3, m.created_at_ms).bind(4, m.n_records);
    if (dup->step()) continue;
    auto ins = mine.prepare("INSERT INTO models(target_id, kind, feature_version, blob, n_records, "
                            "metrics, created_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    ins->bind(1, w.target_id(t)).bind(2, m.kind).bind(3, m.feature_version).bind_blob(4, m.blob);
    ins->bind(5, m.n_records).bind(6, m.metrics.dump()).bind(7, m.created_at_ms).run();
    ++report.models;
  }
}

// Copies jobs whose name is new here; a job of the same name is this file's own job.
void merge_jobs(Connection& mine, const std::vector<Job>& jobs, MergeReport& report) {
  for (const Job& j : jobs) {
    auto ins = mine.prepare("INSERT INTO jobs(name, spec, state, progress, created_at, updated_at) "
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
  const std::vector<Job> jobs = has_models_and_jobs ? other.jobs() : std::vector<Job>{};
  return conn_->write([&] {
    MergeReport report;
    Writer w(*conn_);
    const std::int64_t now = now_ms();
    for (const TargetInfo& t : targets) {
      w.target_id(t);  // targets without records still carry their description
      other.for_each_record(t.key, [&](const Record& r) {
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
    for_each_record(*filter.target_key, write);  // streams: exports of any size
  } else if (!filter.target_key && !filter.workload_key && !filter.op && !filter.status &&
             !filter.since_ms && filter.limit == 0) {
    for (const TargetInfo& t : targets()) for_each_record(t.key, write);
  } else {
    auto rows = query(filter);
    std::reverse(rows.begin(), rows.end());  // oldest first, like the streamed exports
    for (const Record& r : rows) write(r);
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

MergeReport TuningDatabase::import_jsonl(std::istream& in, const std::string& what,
                                         const RecordCheck& check) {
  // Streams line by line inside one write transaction, so an export of any size imports in
  // bounded memory, and a bad line anywhere rolls everything back.
  bool consumed = false;
  return conn_->write([&] {
    // A retry would re-read a stream that is already used up. With BEGIN IMMEDIATE the lock
    // is held from the first line on, so this is a guard, not an expected path.
    if (consumed) {
      throw Error(ErrorKind::io, what + ": the database was busy mid-import; nothing was imported, "
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
        "WHERE status = 'ok') WHERE rank > ?1)");
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

std::string TuningDatabase::integrity_check() const {
  return conn_->read([&] {
    std::string problems;
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
