// SqlRecordStore: the RecordStore (db/record_store.hpp) of a tuning database (an SQLite file
// or a PostgreSQL database: one SQL text serves both, db/internal/sql.hpp),
// plus the queries only SQL answers cheaply (filters, best per workload, the cheap best
// form for runtime lookups). A TuningDatabase owns one and hands it out as records();
// it shares the database's connection, so it lives exactly as long as the database.
#pragma once

#include <string>
#include <vector>

#include "db/record_store.hpp"

namespace atvoss::db {

class Connection;  // db/internal/sql.hpp
namespace rows {
struct DecodeCache;  // db/internal/rows.hpp
}

// The best schedule of one workload on one target (export-table and `best` output).
struct BestEntry {
  Workload workload;
  Schedule schedule;
  double time_us = 0;
  std::int64_t record_id = 0;
};

class SqlRecordStore final : public RecordStore {
 public:
  SqlRecordStore(Connection& conn, rows::DecodeCache& cache) : conn_(conn), cache_(cache) {}
  SqlRecordStore(const SqlRecordStore&) = delete;
  SqlRecordStore& operator=(const SqlRecordStore&) = delete;

  // insert(): one transaction; once it returns the whole batch is durable.
  using RecordStore::insert;
  std::vector<std::int64_t> insert(std::span<const Record> batch) override;
  // Joins every write of this database inside body (records, models, jobs) into one
  // transaction.
  void write_together(const std::function<void()>& body) override;
  std::optional<Record> find(const std::string& workload_key, const std::string& target_key,
                             const std::string& schedule_key) const override;
  // One transaction for the batch.
  std::vector<bool> claim(const Workload& workload, const TargetInfo& target,
                          std::span<const std::string> schedule_keys, const std::string& owner,
                          std::int64_t ttl_ms) override;
  void release(const std::string& owner) override;
  bool contains(const std::string& workload_key, const std::string& target_key,
                const std::string& schedule_key) const override;
  // Answered from the partial index records_best, without scanning the records table.
  std::vector<Record> best(const std::string& workload_key, const std::string& target_key, int k) const override;
  std::vector<Record> history(const std::string& workload_key,
                              const std::optional<std::string>& target_key = std::nullopt) const override;
  std::vector<Record> history_after(const std::string& workload_key, const std::string& target_key,
                                    std::int64_t after_id) const override;
  bool commits_in_id_order() const override;
  // Pages by id, so fn may read this database and a busy retry resumes where it stopped.
  void for_each_record(const std::string& target_key, const std::function<bool(const Record&)>& fn) const override;

  // Like best(), but only schedule and time of each (no repeats or profile to decode):
  // the cheap form for runtime queries such as HTTP GET /v1/best.
  std::vector<BestEntry> best_schedules(const std::string& workload_key, const std::string& target_key, int k) const;
  // The database's plan for the best() query, one step per line (tests check it uses the index).
  std::string explain_best_plan() const;
  // Records matching the filter, newest first.
  std::vector<Record> query(const RecordFilter& filter) const;
  // The best valid schedule of every workload measured on target, ordered by workload key.
  std::vector<BestEntry> best_per_workload(const std::string& target_key) const;

 private:
  Connection& conn_;
  rows::DecodeCache& cache_;
};

}  // namespace atvoss::db
