// TuningDatabase: every measurement, trained model and job of atvoss, in one SQLite file.
// Start here for the database module; db/record.hpp holds the value types it trades in.
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

#include "db/record.hpp"

namespace atvoss::db {

class Connection;  // db/sqlite.hpp

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

// The best schedule of one workload on one target (export-table and `best` output).
struct BestEntry {
  Workload workload;
  Schedule schedule;
  double time_us = 0;
  std::int64_t record_id = 0;
};

class TuningDatabase {
 public:
  // The schema this build writes. Files with a larger user_version are refused.
  static constexpr int kSchemaVersion = 3;

  // Opens (creating and migrating as needed) the database at path; ":memory:" gives a
  // private in-memory database. Errors: io (cannot open/create, busy), corrupt (not a
  // database, truncated, or damaged), bad_input (newer schema than this build, or an SQLite
  // file of another application). A failed open never modifies the file.
  static TuningDatabase open(const std::string& path, const OpenOptions& options = {});

  TuningDatabase(TuningDatabase&&) noexcept;
  TuningDatabase& operator=(TuningDatabase&&) noexcept;
  ~TuningDatabase();

  const std::string& path() const { return path_; }
  int schema_version() const;

  // ---- records -------------------------------------------------------------------
  // Stores a batch in one transaction and returns the row id of each record, in order.
  // REQUIRES: no record has an infrastructure status (else ErrorKind::internal, nothing stored).
  // A record whose key already exists is combined into the existing row (MergeReport rules).
  std::vector<std::int64_t> insert(std::span<const Record> batch);
  std::int64_t insert(const Record& record);

  // Runs body in one write transaction that every write of this object inside it joins:
  // they all commit together, or none does (body throws). On a busy database body may
  // run more than once, so it must only write to the database.
  void write_together(const std::function<void()>& body);

  // The stored record for (workload, target, schedule key), for de-duplication.
  std::optional<Record> find(const std::string& workload_key, const std::string& target_key,
                             const std::string& schedule_key) const;
  bool contains(const std::string& workload_key, const std::string& target_key,
                const std::string& schedule_key) const;

  // Up to k valid (status ok) records of (workload, target), fastest first. Answered
  // from the partial index records_best, without scanning the records table.
  std::vector<Record> best(const std::string& workload_key, const std::string& target_key,
                           int k) const;

  // Like best(), but only schedule and time of each (no repeats or profile to decode):
  // the cheap form for runtime queries such as HTTP GET /v1/best.
  std::vector<BestEntry> best_schedules(const std::string& workload_key,
                                        const std::string& target_key, int k) const;

  // SQLite's plan for the best() query, one step per line (tests check it uses the index).
  std::string explain_best_plan() const;

  // Every record of one workload, oldest first; restricted to one target if given.
  std::vector<Record> history(const std::string& workload_key,
                              const std::optional<std::string>& target_key = std::nullopt) const;

  // Streams every record of a target (any status) in id order, for training, without
  // loading them all at once. fn returns false to stop early. Do not write to this
  // database from inside fn.
  void for_each_record(const std::string& target_key,
                       const std::function<bool(const Record&)>& fn) const;

  // Records matching the filter, newest first.
  std::vector<Record> query(const RecordFilter& filter) const;

  // The best valid schedule of every workload measured on target, ordered by workload key.
  std::vector<BestEntry> best_per_workload(const std::string& target_key) const;

  // ---- targets and workloads -------------------------------------------------------
  std::vector<TargetInfo> targets() const;
  std::optional<TargetInfo> target(const std::string& key) const;
  // Targets whose name is exactly name (there may be several descriptions of one name).
  std::vector<TargetInfo> targets_named(const std::string& name) const;
  std::optional<Workload> workload(const std::string& key) const;

  // ---- models ----------------------------------------------------------------------
  // Stores a model for target (the target row is created if absent); returns its id.
  std::int64_t save_model(const TargetInfo& target, const ModelRecord& model);
  // Latest model of (target, kind), optionally of one feature version.
  std::optional<ModelRecord> load_model(const std::string& target_key, const std::string& kind,
                                        std::optional<int> feature_version = std::nullopt) const;
  // Every model of a target, newest first, without blobs (blob left empty).
  std::vector<ModelRecord> list_models(const std::string& target_key) const;

  // ---- jobs ------------------------------------------------------------------------
  // bad_input if a job of that name exists.
  std::int64_t create_job(const std::string& name, const Json& spec);
  std::optional<Job> job(std::int64_t id) const;
  std::optional<Job> job_named(const std::string& name) const;
  std::vector<Job> jobs() const;
  // not_found if no such job. Bumps updated_at.
  void update_job(std::int64_t id, const std::string& state, double progress);
  void update_job_spec(std::int64_t id, const Json& spec);
  bool delete_job(std::int64_t id);  // false if absent (its task states go with it)
  // Per-task state of a job (the tuner saves each task's search state here), replaced
  // whole on every save. not_found if no such job. merge_from does not copy task states:
  // they refer to this file's record ids.
  void save_job_task(std::int64_t job_id, const std::string& task, const Json& state);
  std::map<std::string, Json> job_tasks(std::int64_t job_id) const;

  // ---- maintenance -----------------------------------------------------------------
  Stats stats() const;

  // Merges another database file (opened read-only, never modified) into this one in one
  // transaction: records de-duplicated by key (MergeReport rules), models copied, jobs
  // whose name is new copied.
  MergeReport merge_from(const std::string& other_path);

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
  explicit TuningDatabase(std::string path);
  // Parsed workload and target rows by id. Those rows are never updated or deleted, so the
  // cache cannot go stale, even when other processes write the same file. Filled only by
  // reads outside this object's write transactions (a rolled-back id could be reused).
  struct DecodeCache;
  std::string path_;
  std::unique_ptr<Connection> conn_;
  std::unique_ptr<DecodeCache> cache_;
};

// Identifies what a JSON-lines export is, so an import can check it ("atvoss-record").
inline constexpr const char* kRecordFormat = "atvoss-record";
inline constexpr int kRecordFormatVersion = 1;

}  // namespace atvoss::db
