// The RecordStore contract (db/record_store.hpp), run against every implementation: the
// SQL store a TuningDatabase hands out (on SQLite and on PostgreSQL) and the in-memory one. A behaviour that differs
// between them fails here for the one that drifted.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "db/memory_record_store.hpp"
#include "db/tuning_database.hpp"
#include "db_test_util.hpp"
#include "pg_test_util.hpp"

namespace atvoss::db {
namespace {

using testing::matmul;
using testing::ok_us;
using testing::record;
using testing::tiles;

struct SqliteHolder {
  TuningDatabase db = TuningDatabase::open(":memory:");
  RecordStore& store() { return db.records(); }
};

struct PostgresHolder {
  testing::PgSchema schema;
  TuningDatabase db = TuningDatabase::open(schema.url());
  RecordStore& store() { return db.records(); }
};

struct MemoryHolder {
  MemoryRecordStore mem;
  RecordStore& store() { return mem; }
};

template <typename Holder>
class RecordStoreContract : public ::testing::Test {
 protected:
  Holder holder_;
  RecordStore& store() { return holder_.store(); }
  const Workload w_ = matmul(64, 64, 64);
  const TargetInfo t_ = TargetInfo::named("gpu-a");
  const TargetInfo other_ = TargetInfo::named("gpu-b");
};

using Implementations = ::testing::Types<SqliteHolder, PostgresHolder, MemoryHolder>;
TYPED_TEST_SUITE(RecordStoreContract, Implementations);

TYPED_TEST(RecordStoreContract, BestIsFastestOkOfThatTargetOnly) {
  RecordStore& s = this->store();
  Measurement failed;
  failed.status = Status::compile_error;
  failed.message = "no";
  const std::vector<Record> batch = {
      record(this->w_, this->t_, tiles(16, 16), ok_us(30)), record(this->w_, this->t_, tiles(32, 16), ok_us(10)),
      record(this->w_, this->t_, tiles(64, 16), failed), record(this->w_, this->other_, tiles(16, 32), ok_us(1))};
  const auto ids = s.insert(batch);
  ASSERT_EQ(ids.size(), 4u);
  const auto best = s.best(this->w_.key(), this->t_.key, 5);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].schedule, tiles(32, 16));
  EXPECT_EQ(best[0].id, ids[1]);
  EXPECT_EQ(best[1].schedule, tiles(16, 16));
  EXPECT_EQ(s.best(this->w_.key(), this->t_.key, 1).size(), 1u);
  EXPECT_TRUE(s.best(this->w_.key(), this->t_.key, 0).empty());
  EXPECT_EQ(s.history(this->w_.key(), this->t_.key).size(), 3u);
  EXPECT_EQ(s.history(this->w_.key()).size(), 4u);
  EXPECT_TRUE(s.contains(this->w_.key(), this->t_.key, tiles(64, 16).key()));
  EXPECT_FALSE(s.contains(this->w_.key(), this->other_.key, tiles(64, 16).key()));
  const auto f = s.find(this->w_.key(), this->t_.key, tiles(64, 16).key());
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->measurement.status, Status::compile_error);
  EXPECT_EQ(f->measurement.time_us, 0);
}

TYPED_TEST(RecordStoreContract, ABatchHoldingOneKeyTwiceStoresOneRowWithBothRepeats) {
  RecordStore& s = this->store();
  const auto before = s.insert(record(this->w_, this->t_, tiles(64, 64), ok_us(9, {9})));
  std::vector<Record> batch;
  for (int i = 0; i < 70; ++i) batch.push_back(record(this->w_, this->t_, tiles(8 + i, 16), ok_us(20 + i)));
  batch.push_back(record(this->w_, this->t_, tiles(8, 16), ok_us(40, {40})));       // batch[0]'s key again
  batch.push_back(record(this->w_, this->t_, tiles(64, 64), ok_us(11, {11})));      // a stored key
  batch.push_back(record(this->w_, this->t_, tiles(8 + 65, 16), ok_us(50, {50})));  // batch[65]'s, 7 rows on
  const auto ids = s.insert(batch);
  ASSERT_EQ(ids.size(), batch.size());
  EXPECT_EQ(ids[70], ids[0]);
  EXPECT_EQ(ids[71], before);
  EXPECT_EQ(ids[72], ids[65]);
  EXPECT_EQ(s.find(this->w_.key(), this->t_.key, tiles(73, 16).key())->measurement.repeats,
            (std::vector<double>{85, 50}));
  std::set<std::int64_t> distinct(ids.begin(), ids.begin() + 70);
  EXPECT_EQ(distinct.size(), 70u);
  EXPECT_EQ(s.history(this->w_.key(), this->t_.key).size(), 71u);
  EXPECT_EQ(s.find(this->w_.key(), this->t_.key, tiles(8, 16).key())->measurement.repeats,
            (std::vector<double>{20, 40}));
  EXPECT_EQ(s.find(this->w_.key(), this->t_.key, tiles(64, 64).key())->measurement.repeats,
            (std::vector<double>{9, 11}));
}

TYPED_TEST(RecordStoreContract, ADuplicateKeyKeepsOneRowAndCombinesRepeats) {
  RecordStore& s = this->store();
  const auto first = s.insert(record(this->w_, this->t_, tiles(16, 16), ok_us(10, {10, 12})));
  // The same repeats again: identical, nothing changes.
  EXPECT_EQ(s.insert(record(this->w_, this->t_, tiles(16, 16), ok_us(10, {10, 12}))), first);
  // New repeats: kept beside the old ones; the time is their median.
  EXPECT_EQ(s.insert(record(this->w_, this->t_, tiles(16, 16), ok_us(14, {14}))), first);
  const auto r = s.find(this->w_.key(), this->t_.key, tiles(16, 16).key());
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->measurement.repeats, (std::vector<double>{10, 12, 14}));
  EXPECT_DOUBLE_EQ(r->measurement.time_us, 12);
  // A failure after a success is a conflict: the success stays.
  Measurement failed;
  failed.status = Status::runtime_error;
  failed.message = "crash";
  s.insert(record(this->w_, this->t_, tiles(16, 16), failed));
  EXPECT_TRUE(s.find(this->w_.key(), this->t_.key, tiles(16, 16).key())->measurement.ok());
  // A success after a failure replaces it.
  s.insert(record(this->w_, this->t_, tiles(32, 32), failed));
  s.insert(record(this->w_, this->t_, tiles(32, 32), ok_us(7)));
  EXPECT_DOUBLE_EQ(s.find(this->w_.key(), this->t_.key, tiles(32, 32).key())->measurement.time_us, 7);
  EXPECT_EQ(s.history(this->w_.key(), this->t_.key).size(), 2u);
}

TYPED_TEST(RecordStoreContract, AnInfrastructureErrorRefusesTheWholeBatch) {
  RecordStore& s = this->store();
  Measurement lost;
  lost.status = Status::worker_lost;
  const std::vector<Record> batch = {record(this->w_, this->t_, tiles(16, 16), ok_us(3)),
                                     record(this->w_, this->t_, tiles(32, 16), lost)};
  try {
    s.insert(batch);
    FAIL() << "expected an internal error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
  }
  EXPECT_TRUE(s.history(this->w_.key()).empty());
}

TYPED_TEST(RecordStoreContract, WriteTogetherIsAllOrNothing) {
  RecordStore& s = this->store();
  EXPECT_THROW(s.write_together([&] {
    s.insert(record(this->w_, this->t_, tiles(16, 16), ok_us(3)));
    s.insert(record(this->w_, this->t_, tiles(32, 16), ok_us(4)));
    throw std::runtime_error("the checkpoint failed");
  }),
               std::runtime_error);
  EXPECT_TRUE(s.history(this->w_.key()).empty());
  s.write_together([&] {
    s.insert(record(this->w_, this->t_, tiles(16, 16), ok_us(3)));
    s.insert(record(this->w_, this->t_, tiles(32, 16), ok_us(4)));
  });
  EXPECT_EQ(s.history(this->w_.key()).size(), 2u);
}

// What a reader that has seen up to an id has not seen: that workload's records on that target
// above the id, in id order (not by creation time); nothing else. Only a server store may
// commit out of id order.
TYPED_TEST(RecordStoreContract, HistoryAfterAnIdHoldsOnlyTheNewerRecordsInIdOrder) {
  RecordStore& s = this->store();
  const auto first = s.insert(std::vector<Record>{record(this->w_, this->t_, tiles(64, 64), ok_us(30)),
                                                  record(this->w_, this->other_, tiles(64, 64), ok_us(3)),
                                                  record(matmul(8, 8, 8), this->t_, tiles(64, 64), ok_us(2))});
  Record late = record(this->w_, this->t_, tiles(32, 32), ok_us(20));
  late.created_at_ms = 1;  // earlier than the first by the clock: the id order still rules
  const auto second = s.insert(std::vector<Record>{late, record(this->w_, this->t_, tiles(16, 16), ok_us(9))});
  const auto keys = [](const std::vector<Record>& rs) {
    std::vector<std::string> out;
    for (const Record& r : rs) out.push_back(r.schedule.key());
    return out;
  };
  const std::string w = this->w_.key(), t = this->t_.key;
  EXPECT_EQ(keys(s.history_after(w, t, 0)),
            (std::vector<std::string>{tiles(64, 64).key(), tiles(32, 32).key(), tiles(16, 16).key()}));
  EXPECT_EQ(keys(s.history_after(w, t, first[0])),
            (std::vector<std::string>{tiles(32, 32).key(), tiles(16, 16).key()}));
  EXPECT_EQ(keys(s.history_after(w, t, second[0])), (std::vector<std::string>{tiles(16, 16).key()}));
  EXPECT_TRUE(s.history_after(w, t, second[1]).empty());
  EXPECT_EQ(s.commits_in_id_order(), !(std::is_same_v<TypeParam, PostgresHolder>));
}

TYPED_TEST(RecordStoreContract, ForEachRecordWalksOneTargetInIdOrderAndStops) {
  RecordStore& s = this->store();
  for (int i = 1; i <= 5; ++i) s.insert(record(this->w_, this->t_, tiles(16 * i, 16), ok_us(i)));
  s.insert(record(this->w_, this->other_, tiles(16, 16), ok_us(1)));
  std::vector<std::int64_t> seen;
  s.for_each_record(this->t_.key, [&](const Record& r) {
    seen.push_back(r.id);
    return seen.size() < 3;
  });
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_LT(seen[0], seen[1]);
  EXPECT_LT(seen[1], seen[2]);
  int all = 0;
  s.for_each_record(this->t_.key, [&](const Record& r) {
    EXPECT_EQ(r.target.key, this->t_.key);
    ++all;
    return true;
  });
  EXPECT_EQ(all, 5);
}

}  // namespace
}  // namespace atvoss::db
