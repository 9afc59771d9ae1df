// RecordFollower (db/record_follower.hpp): each record of its workload and target once, in id
// order, on an SQLite file and on PostgreSQL; and on PostgreSQL a record committed after one
// with a higher id was read (a straggler) still arrives, within whole_read_every reads.
#include "db/record_follower.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "db/tuning_database.hpp"
#include "db_test_util.hpp"
#include "pg_test_util.hpp"

namespace atvoss::db {
namespace {

using testing::matmul;
using testing::ok_us;
using testing::record;
using testing::tiles;

std::vector<std::string> keys(const std::vector<Record>& rs) {
  std::vector<std::string> out;
  for (const Record& r : rs) out.push_back(r.schedule.key());
  return out;
}

class RecordFollowerTest : public ::testing::TestWithParam<bool> {  // true: PostgreSQL
 protected:
  void SetUp() override {
    if (GetParam()) pg_ = std::make_unique<testing::PgSchema>();
    path_ = GetParam() ? pg_->url() : dir_.file("f.db");
  }
  testing::TempDir dir_;
  std::unique_ptr<testing::PgSchema> pg_;
  std::string path_;
  const Workload w_ = matmul(64, 64, 64);
  const TargetInfo t_ = TargetInfo::named("gpu-a");
};

INSTANTIATE_TEST_SUITE_P(Store, RecordFollowerTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Postgres" : "File"; });

TEST_P(RecordFollowerTest, EachRecordOfItsWorkloadAndTargetArrivesOnceInIdOrder) {
  TuningDatabase writer = TuningDatabase::open(path_);
  TuningDatabase reader = TuningDatabase::open(path_);
  RecordFollower follow(reader.records(), w_.key(), t_.key, 2);
  EXPECT_TRUE(follow.next().empty());
  writer.records().insert(std::vector<Record>{record(w_, t_, tiles(16, 16), ok_us(3)),
                                              record(w_, TargetInfo::named("gpu-b"), tiles(16, 16), ok_us(3)),
                                              record(matmul(8, 8, 8), t_, tiles(16, 16), ok_us(3))});
  EXPECT_EQ(keys(follow.next()), std::vector<std::string>{tiles(16, 16).key()});
  writer.records().insert(
      std::vector<Record>{record(w_, t_, tiles(32, 16), ok_us(2)), record(w_, t_, tiles(64, 16), ok_us(1))});
  EXPECT_EQ(keys(follow.next()), (std::vector<std::string>{tiles(32, 16).key(), tiles(64, 16).key()}));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(follow.next().empty());  // whole reads too return nothing twice
}

// Writer A takes an id and holds its transaction open; writer B takes a higher id and commits;
// the follower reads B's record; then A commits. An id-only read would never see A's record.
TEST(RecordFollowerPostgres, ARecordCommittedUnderALowerIdAfterAHigherOneWasReadStillArrives) {
  testing::PgSchema schema;
  const Workload w = matmul(64, 64, 64);
  const TargetInfo t = TargetInfo::named("gpu-a");
  TuningDatabase a = TuningDatabase::open(schema.url());
  TuningDatabase b = TuningDatabase::open(schema.url());
  TuningDatabase reader = TuningDatabase::open(schema.url());
  constexpr int kEvery = 4;
  RecordFollower follow(reader.records(), w.key(), t.key, kEvery);
  // The workload's and target's rows exist first: a second writer adding them would wait on
  // the first one's uncommitted rows.
  b.records().insert(record(w, t, tiles(8, 8), ok_us(4)));
  ASSERT_EQ(keys(follow.next()), std::vector<std::string>{tiles(8, 8).key()});
  std::mutex m;
  std::condition_variable cv;
  bool inserted = false, go = false;
  std::int64_t a_id = 0;
  std::thread slow([&] {
    a.records().write_together([&] {
      a_id = a.records().insert(record(w, t, tiles(16, 16), ok_us(3)));
      std::unique_lock lock(m);
      inserted = true;
      cv.notify_all();
      cv.wait(lock, [&] { return go; });
    });
  });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return inserted; });
  }
  const std::int64_t b_id = b.records().insert(record(w, t, tiles(32, 16), ok_us(2)));
  ASSERT_LT(a_id, b_id);
  EXPECT_EQ(keys(follow.next()), std::vector<std::string>{tiles(32, 16).key()});
  {
    std::lock_guard lock(m);
    go = true;
  }
  cv.notify_all();
  slow.join();
  std::vector<std::string> later;
  for (int i = 0; i < kEvery; ++i) {
    for (const std::string& k : keys(follow.next())) later.push_back(k);
  }
  EXPECT_EQ(later, std::vector<std::string>{tiles(16, 16).key()});
}

}  // namespace
}  // namespace atvoss::db
