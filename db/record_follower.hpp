// RecordFollower: reads the records of one (workload, target) as other writers add them,
// each once, at a cost that grows with what is new rather than with what is stored: a
// process sharing a database (an atvoss.Optimizer worker, python/src/bindings_optimizer.cpp)
// calls next() before each ask. Where the store commits in id order (an SQLite file) each
// read asks only for ids above the last one read. On PostgreSQL a transaction that took a
// lower id can commit after a higher one was read, so every whole_read_every-th read is
// whole, and such a straggler arrives that many reads late at most.
// Threading: as the store it reads (one thread at a time).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "db/record_store.hpp"

namespace atvoss::db {

class RecordFollower {
 public:
  // store must outlive the follower. whole_read_every >= 1 (1: every read is whole).
  RecordFollower(const RecordStore& store, std::string workload_key, std::string target_key, int whole_read_every = 8);

  // The records not returned by an earlier call, in id order.
  std::vector<Record> next();

 private:
  const RecordStore& store_;
  std::string workload_key_, target_key_;
  int whole_read_every_;
  std::uint64_t reads_ = 0;
  std::int64_t last_id_ = 0;               // the highest id returned
  std::unordered_set<std::int64_t> seen_;  // every id returned, for the whole reads
};

}  // namespace atvoss::db
