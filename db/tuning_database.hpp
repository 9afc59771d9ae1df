// TuningDatabase: every measurement, trained model and job of atvoss, in one SQLite file or
// one PostgreSQL database (a postgresql:// URL, db/postgres_url.hpp), shared by many machines.
// Start here for the database module. It opens the store and owns its one connection, and
// hands out three stores over it: records() (db/sql_record_store.hpp, a RecordStore),
// models() (db/model_store.hpp) and jobs() (db/job_store.hpp); itself it answers for the
// file as a whole: targets, workloads, stats, merge, import/export, prune, check.
// db/record.hpp holds the value types they trade in.
//
// Threading rule: one TuningDatabase per thread (it owns one SQLite connection and its
// prepared-statement cache). Many threads and many processes may open the same file at
// once: the file is in WAL mode, readers never block writers, and a writer that finds the
// file locked waits (busy timeout) and retries its transaction, so "database is locked"
// never reaches a caller unless the lock is held past OpenOptions::lock_wait_ms.
//
// Guarantees:
// - Every query is target-aware: asking for workload W on target T never returns a
//   record measured on another target.
// - insert() of a batch is one transaction: once it returns, the whole batch is durable;
//   if it throws, none of it was stored.
// - Infrastructure errors (worker_lost, session_timeout, error) are never stored as a
//   candidate's result; insert() rejects a batch holding one.
// - One row per (workload, target, schedule key). Storing the same key again with a
//   different result keeps both sets of repeats (see MergeReport).
// - Schema versioned with PRAGMA user_version; an older file is migrated in place inside a
//   transaction at open(), a newer one is refused (ErrorKind::bad_input, file untouched).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "db/job_store.hpp"
#include "db/model_store.hpp"
#include "db/record.hpp"
#include "db/sql_record_store.hpp"

namespace atvoss::db {

class Connection;  // db/internal/sql.hpp
namespace rows {
struct DecodeCache;  // db/internal/rows.hpp
}

struct OpenOptions {
  // Open an existing file only (no create). Default false: a missing file is created.
  bool must_exist = false;
  // Open read-only (queries, export, check, the source of a merge). Default false. An
  // older schema is read as it is, not migrated (version-1 files have no models or jobs).
  bool read_only = false;
  // How long one write transaction may wait for another process's lock before giving
  // up with ErrorKind::io "database is busy". Default 30 s: long enough for a farm of
  // writers doing batch inserts; raising it only delays the report of a stuck writer.
  int lock_wait_ms = 30000;
  // Default true: synchronous=FULL, the WAL is synced at every commit, so a batch the
  // measurer was told is stored survives a power cut. false: synchronous=NORMAL, which
  // still survives a crash or SIGKILL of any process but may lose the last commits on
  // power loss; it saves one fsync per transaction (see bench_db, sync:0 vs sync:1).
  bool sync_every_commit = true;
};

class TuningDatabase {
 public:
  // The schema this build writes. Files with a larger user_version are refused.
  static constexpr int kSchemaVersion = 4;

  // Opens (creating and migrating as needed) the database at path; ":memory:" gives a
  // private in-memory database; a postgresql:// URL a database on a server (its password
  // comes from PGPASSFILE, PGPASSWORD or a service file, never from the URL). Errors: io (cannot open/create, busy),
  // corrupt (not a database, truncated, or damaged), bad_input (newer schema than this build, or an SQLite file of
  // another application). A failed open never modifies the file.
  static TuningDatabase open(const std::string& path, const OpenOptions& options = {});

  TuningDatabase(TuningDatabase&&) noexcept;
  TuningDatabase& operator=(TuningDatabase&&) noexcept;
  ~TuningDatabase();

  const std::string& path() const { return path_; }
  int schema_version() const;

  // ---- the stores, over this database's one connection ------------------------------
  SqlRecordStore& records() { return *records_; }
  const SqlRecordStore& records() const { return *records_; }
  ModelStore& models() { return *models_; }
  const ModelStore& models() const { return *models_; }
  JobStore& jobs() { return *jobs_; }
  const JobStore& jobs() const { return *jobs_; }

  // ---- targets and workloads -------------------------------------------------------
  std::vector<TargetInfo> targets() const;
  std::optional<TargetInfo> target(const std::string& key) const;
  // Targets whose name is exactly name (there may be several descriptions of one name).
  std::vector<TargetInfo> targets_named(const std::string& name) const;
  std::optional<Workload> workload(const std::string& key) const;

  // ---- maintenance -----------------------------------------------------------------
  Stats stats() const;

  // Merges another database file (opened read-only, never modified) into this one in one
  // transaction: records de-duplicated by key (MergeReport rules), models copied, jobs
  // whose name is new copied.
  MergeReport merge_from(const std::string& other_path);

  // Copies every row of another database (opened read-only, never modified; an SQLite file
  // or a URL) into this one, which must be empty, keeping every id, so a job copied
  // mid-run resumes exactly: `atvoss-db migrate`. One transaction. Counts in added
  // (records), models and jobs. bad_input if this database is not empty or the source's
  // schema is older than this build's.
  MergeReport copy_from(const std::string& source);

  // Writes one JSON object per line per matching record (Record::to_json: carries its
  // workload and target); returns the number written.
  std::int64_t export_jsonl(std::ostream& out, const RecordFilter& filter = {}) const;
  // Reads JSON lines written by export_jsonl, streaming, in one write transaction (other
  // writers wait for it). Every record is validated like a measured one: its measurement
  // (core/result_check.hpp), its target (TargetInfo::check) and then `check`, which judges
  // the schedule against the workload's space. All or nothing: a bad line (bad_input
  // naming "<what>:<line>" and the field) leaves the database untouched. `what` names the
  // source in errors.
  MergeReport import_jsonl(std::istream& in, const std::string& what, const RecordCheck& check = {});
  // Stores records gathered elsewhere (e.g. a Kernel Tuner cache) in one transaction,
  // with MergeReport accounting, validated as import_jsonl does ("<what>: record <n>").
  MergeReport import_records(std::span<const Record> records, const std::string& what = "import",
                             const RecordCheck& check = {});

  // Keeps the best k valid records per (workload, target) and deletes the rest, failed
  // records included unless keep_failed. Returns the number of records deleted.
  std::int64_t prune(int k, bool keep_failed = false);

  // PRAGMA integrity_check plus foreign_key_check; returns "ok" or the problems found.
  std::string integrity_check() const;
  void vacuum();

 private:
  TuningDatabase(std::string path, std::unique_ptr<Connection> conn);
  static TuningDatabase open_sqlite(const std::string& path, const OpenOptions& options);   // db/sqlite_open.cpp
  static TuningDatabase open_postgres(const std::string& url, const OpenOptions& options);  // db/postgres_open.cpp
  std::string path_;
  // Heap-held, so the stores' references stay valid when the database is moved.
  std::unique_ptr<Connection> conn_;
  std::unique_ptr<rows::DecodeCache> cache_;
  std::unique_ptr<SqlRecordStore> records_;
  std::unique_ptr<ModelStore> models_;
  std::unique_ptr<JobStore> jobs_;
};

// Identifies what a JSON-lines export is, so an import can check it ("atvoss-record").
inline constexpr const char* kRecordFormat = "atvoss-record";
inline constexpr int kRecordFormatVersion = 1;

}  // namespace atvoss::db
