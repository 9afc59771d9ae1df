// MemoryRecordStore: a RecordStore (db/record_store.hpp) held in memory, for tests, dry
// runs and evaluations that must leave no file. Same contract as the SQLite store; ids
// count from 1 in insertion order; nothing survives the object.
#pragma once

#include <map>
#include <tuple>

#include "db/record_store.hpp"

namespace atvoss::db {

class MemoryRecordStore final : public RecordStore {
 public:
  using RecordStore::insert;
  std::vector<std::int64_t> insert(std::span<const Record> batch) override;
  void write_together(const std::function<void()>& body) override;
  std::optional<Record> find(const std::string& workload_key, const std::string& target_key,
                             const std::string& schedule_key) const override;
  std::vector<Record> best(const std::string& workload_key, const std::string& target_key, int k) const override;
  std::vector<Record> history(const std::string& workload_key,
                              const std::optional<std::string>& target_key = std::nullopt) const override;
  void for_each_record(const std::string& target_key, const std::function<bool(const Record&)>& fn) const override;

  std::size_t size() const { return rows_.size(); }

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // workload, target, schedule
  void put(const Record& r, std::int64_t now);

  std::map<std::int64_t, Record> rows_;  // by id: id order is insertion order
  std::map<Key, std::int64_t> ids_;
  std::int64_t next_id_ = 1;
  int depth_ = 0;  // write_together nesting
};

}  // namespace atvoss::db
