// Adopting a former target's records: copied to the new key with their measurements, the
// new target's own records kept, the originals left, and a second adoption a no-op.
#include "db/adopt_records.hpp"

#include <gtest/gtest.h>

#include "db/tuning_database.hpp"
#include "db_test_util.hpp"

namespace atvoss::db {
namespace {

using namespace atvoss::db::testing;

TEST(AdoptRecordsTest, AFormerTargetsRecordsAreCopiedAndNothingIsLostOrOverwritten) {
  auto db = TuningDatabase::open(":memory:");
  const TargetInfo former = TargetInfo::named("host-legacy000000");
  const TargetInfo now = TargetInfo::named("host-current00000");
  const Workload w = matmul(64, 64, 64, "float32");
  Record failed = record(w, former, tiles(32, 32), ok_us(0));
  failed.measurement = Measurement::failed(Status::compile_error, "no");
  db.records().insert(std::vector<Record>{record(w, former, tiles(16, 16), ok_us(5)),
                                          record(w, former, tiles(64, 64), ok_us(9)), failed,
                                          record(w, now, tiles(64, 64), ok_us(7))});
  EXPECT_EQ(adopt_records(db.records(), former.key, now), 2);  // (64, 64) was measured under now
  const auto best = db.records().best(w.key(), now.key, 5);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].schedule, tiles(16, 16));
  EXPECT_DOUBLE_EQ(best[0].measurement.time_us, 5);
  EXPECT_DOUBLE_EQ(best[1].measurement.time_us, 7);  // now's own, not the former 9
  EXPECT_EQ(db.records().find(w.key(), now.key, tiles(32, 32).key())->measurement.status, Status::compile_error);
  EXPECT_EQ(db.records().best(w.key(), former.key, 5).size(), 2u);  // the originals stay
  EXPECT_EQ(adopt_records(db.records(), former.key, now), 0);
  EXPECT_EQ(adopt_records(db.records(), now.key, now), 0);
}

}  // namespace
}  // namespace atvoss::db
