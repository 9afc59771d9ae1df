// RecordStore: the records half of the tuning database as an interface, like TVM's
// Database: what the tuner, the farm's result log and model evaluation need (store a
// round, ask what is measured, read a workload's history, stream a target's records).
// Two implementations: SqlRecordStore (db/sql_record_store.hpp, the durable one a
// TuningDatabase hands out) and MemoryRecordStore (db/memory_record_store.hpp: tests,
// dry runs, evaluation without a file). Both keep the same contract:
// - one record per (workload key, target key, schedule key); a record for a key already
//   held is resolved by the duplicate rule (db/duplicate_rule.hpp);
// - a record with an infrastructure status is refused (ErrorKind::internal), the whole
//   batch with it;
// - every query is target-aware.
// Threading: one store per thread, as TuningDatabase.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "db/record.hpp"

namespace atvoss::db {

// The longest a claim lasts (RecordStore::claim): ten minutes, five times the tuner's 120 s.
inline constexpr std::int64_t kMaxClaimTtlMs = 600000;

class RecordStore {
 public:
  virtual ~RecordStore() = default;

  // Stores a batch atomically and returns the id of each record's row, in order.
  virtual std::vector<std::int64_t> insert(std::span<const Record> batch) = 0;
  std::int64_t insert(const Record& record) { return insert(std::span<const Record>(&record, 1)).front(); }

  // Runs body so that every write to this store inside it lands together, or none does
  // (body throws). body may run more than once (a busy SQLite file retries), so it must
  // only write to the store.
  virtual void write_together(const std::function<void()>& body) = 0;

  // The stored record for (workload, target, schedule key), for de-duplication.
  virtual std::optional<Record> find(const std::string& workload_key, const std::string& target_key,
                                     const std::string& schedule_key) const = 0;
  virtual bool contains(const std::string& workload_key, const std::string& target_key,
                        const std::string& schedule_key) const {
    return find(workload_key, target_key, schedule_key).has_value();
  }

  // Up to k valid (status ok) records of (workload, target), fastest first (ties: oldest).
  virtual std::vector<Record> best(const std::string& workload_key, const std::string& target_key, int k) const = 0;

  // Every record of one workload, oldest first; restricted to one target if given.
  virtual std::vector<Record> history(const std::string& workload_key,
                                      const std::optional<std::string>& target_key = std::nullopt) const = 0;

  // The records of (workload, target) whose id is above after_id, in id order: what a reader
  // that has seen up to after_id has not seen yet. Exact only where commits_in_id_order();
  // elsewhere a record committed late under a lower id than one already read is missed, and a
  // reader should read history() now and then.
  virtual std::vector<Record> history_after(const std::string& workload_key, const std::string& target_key,
                                            std::int64_t after_id) const {
    std::vector<Record> out;
    for (Record& r : history(workload_key, target_key))
      if (r.id > after_id) out.push_back(std::move(r));
    std::stable_sort(out.begin(), out.end(), [](const Record& a, const Record& b) { return a.id < b.id; });
    return out;
  }
  // Whether records become visible in the order of their ids: true where one writer commits
  // at a time (an SQLite file, memory), false on a server where transactions that took ids
  // in one order may commit in another (PostgreSQL).
  virtual bool commits_in_id_order() const { return true; }

  // Claims on schedules being measured, for processes that share one store: claim() takes
  // each (workload, target, schedule key) for owner for ttl_ms (at most kMaxClaimTtlMs),
  // unless another owner's claim on it is still live, and says per key whether owner holds
  // it now. Time is the store's clock (a PostgreSQL server's), never the claimant's: a
  // claimant whose clock runs ahead would otherwise block the others for as long as it is
  // ahead. A claim expiring more than kMaxClaimTtlMs from now (written by hand, or by a
  // clock that has since been set back) counts as lapsed. Claiming again what one holds
  // renews it. release() drops every claim of owner. A store no other process can see (the
  // in-memory one) grants every claim.
  virtual std::vector<bool> claim(const Workload&, const TargetInfo&, std::span<const std::string> schedule_keys,
                                  const std::string& /*owner*/, std::int64_t /*ttl_ms*/) {
    return std::vector<bool>(schedule_keys.size(), true);
  }
  virtual void release(const std::string& /*owner*/) {}

  // Every record of a target (any status) in id order; fn returns false to stop early.
  // Do not write to the store from inside fn.
  virtual void for_each_record(const std::string& target_key, const std::function<bool(const Record&)>& fn) const = 0;
};

}  // namespace atvoss::db
