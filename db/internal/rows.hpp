// Rows: the SQL text and the row codecs that the record, model and job stores and the
// maintenance operations of TuningDatabase share over one connection
// (db/tuning_database.hpp). Internal to db/.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "db/duplicate_rule.hpp"
#include "db/internal/sql.hpp"
#include "db/record.hpp"

namespace atvoss::db::rows {

// The columns RowDecoder::decode reads, joined with their workload and target.
inline constexpr std::string_view kRecordSelect =
    "SELECT r.id, r.workload_id, w.description, r.target_id, t.key, t.name, t.description, "
    "r.schedule, r.status, r.error, r.time_us, r.repeats, r.profile, r.worker, r.job, "
    "r.tool_version, r.created_at "
    "FROM records r JOIN workloads w ON w.id = r.workload_id JOIN targets t ON t.id = r.target_id ";

// status = 'ok' spelled exactly as in the partial index records_best, so the planner uses it.
inline constexpr std::string_view kBestTail =
    "WHERE w.key = ?1 AND t.key = ?2 AND r.status = 'ok' ORDER BY r.time_us, r.id LIMIT ?3";

inline constexpr std::string_view kJobSelect =
    "SELECT id, name, spec, state, progress, created_at, updated_at FROM jobs ";
inline constexpr std::string_view kModelSelect =
    "SELECT m.id, t.key, m.kind, m.feature_version, m.blob, m.n_records, m.metrics, m.created_at "
    "FROM models m JOIN targets t ON t.id = m.target_id ";

inline std::string record_sql(std::string_view tail) { return std::string(kRecordSelect) + std::string(tail); }

std::vector<double> parse_repeats(const std::string& text);
std::string dump_repeats(const std::vector<double>& repeats);
std::string dump_profile(const Profile& p);
// Exactly Schedule::to_json().dump(): the schedule key is a hash of these bytes.
std::string dump_schedule(const Schedule& s);
Schedule parse_schedule(const std::string& text);
// The stored schedule key of a stored schedule text: FNV-1a of its bytes, 16 hex digits
// (and a NUL) written into out.
void schedule_key(std::string_view schedule_text, char (&out)[17]);
Profile parse_profile(const std::string& text);
ModelRecord decode_model(const Statement& s, bool with_blob);
JobRow decode_job(const Statement& s);
bool is_memory(const std::string& path);

// Parsed workload and target rows by id. Those rows are never updated or deleted, so the
// cache cannot go stale, even when other processes write the same file. Filled only by
// reads outside this connection's write transactions (a rolled-back id could be reused).
struct DecodeCache {
  std::unordered_map<std::int64_t, Workload> workloads;
  std::unordered_map<std::int64_t, TargetInfo> targets;
};

// Turns a records row (kRecordSelect columns) into a Record through the cache.
class RowDecoder {
 public:
  explicit RowDecoder(DecodeCache& cache);
  Record decode(const Statement& s);
  // The workload whose id is in column 0 of s and whose description is in column col.
  const Workload& workload(std::int64_t id, const Statement& s, int col);

 private:
  const TargetInfo& target(std::int64_t id, const Statement& s);
  DecodeCache& cache_;
};

void count(MergeReport& report, DuplicateOutcome o);
// internal error: an infrastructure status is a failure to measure, not a result to store.
void reject_infrastructure(const Record& r);

// Writes inside the caller's transaction. Id caches live only as long as the transaction,
// so a rollback can never leave a cached id that no longer exists.
class Writer {
 public:
  explicit Writer(Connection& c) : c_(c) {}
  std::int64_t target_id(const TargetInfo& t);
  std::int64_t workload_id(const Workload& w);
  // Inserts r, or resolves it against the row that has its key (db/duplicate_rule.hpp).
  // Returns the row id.
  std::pair<std::int64_t, DuplicateOutcome> put(const Record& r, std::int64_t now);
  // put() of every record, in order, with the same outcomes; on PostgreSQL the new ones
  // travel in multi-row INSERTs (one round trip per 64 records).
  std::vector<std::pair<std::int64_t, DuplicateOutcome>> put_all(std::span<const Record> batch, std::int64_t now);

 private:
  // A record's stored texts and ids, kept alive while a statement binds them statically.
  struct Row {
    std::int64_t wid = 0;
    std::int64_t tid = 0;
    std::string schedule;
    char key[17] = {};
    std::string repeats;
    std::string profile;
  };
  Row encode(const Record& r);
  static void bind_row(Statement& s, int base, const Record& r, const Row& row, std::int64_t now);
  std::pair<std::int64_t, DuplicateOutcome> combine(std::int64_t wid, std::int64_t tid, std::string_view key,
                                                    const Record& r);
  void overwrite(std::int64_t id, const Record& r);
  Connection& c_;
  std::unordered_map<std::string, std::int64_t> targets_;
  std::unordered_map<std::string, std::int64_t> workloads_;
};

}  // namespace atvoss::db::rows
