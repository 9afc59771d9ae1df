// The one /v1/best answer: target resolution (key, unique name, ambiguous name refused)
// and the exact-then-nearest lookup that `atvoss-db best`, `serve` and the farm share.
#include "db/best_lookup.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "db_test_util.hpp"

namespace atvoss::db {
namespace {

using namespace atvoss::db::testing;
using ::testing::HasSubstr;

TEST(BestLookupTest, TargetsResolveByKeyOrUniqueNameAndAmbiguityIsRefused) {
  auto db = TuningDatabase::open(":memory:");
  const TargetInfo a = TargetInfo::named("npu-a");
  TargetInfo twin1{"1111111111111111", "twin", Json{{"name", "twin"}, {"rev", 1}}};
  TargetInfo twin2{"2222222222222222", "twin", Json{{"name", "twin"}, {"rev", 2}}};
  db.records().insert(std::vector<Record>{record(matmul(64, 64, 64), a, tiles(1, 1), ok_us(3)),
                                          record(matmul(64, 64, 64), twin1, tiles(1, 1), ok_us(3)),
                                          record(matmul(64, 64, 64), twin2, tiles(1, 1), ok_us(3))});
  EXPECT_EQ(resolve_stored_target(db, a.key), a);
  EXPECT_EQ(resolve_stored_target(db, "npu-a"), a);
  EXPECT_EQ(resolve_stored_target(db, twin2.key), twin2);
  try {
    resolve_stored_target(db, "twin");  // the farm used to pick the first one silently
    FAIL() << "an ambiguous name was resolved";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    EXPECT_THAT(e.what(), HasSubstr(twin1.key));
    EXPECT_THAT(e.what(), HasSubstr(twin2.key));
  }
  try {
    resolve_stored_target(db, "npu-z");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
  }
}

TEST(BestLookupTest, ExactBestElseNearestComparableElseNotFound) {
  auto db = TuningDatabase::open(":memory:");
  const TargetInfo t = TargetInfo::named("npu-a");
  db.records().insert(std::vector<Record>{record(matmul(512, 512, 512), t, tiles(1, 1), ok_us(9)),
                                          record(matmul(512, 512, 512), t, tiles(2, 2), ok_us(7)),
                                          record(matmul(4096, 4096, 4096), t, tiles(3, 3), ok_us(900))});
  const BestAnswer exact = best_or_nearest(db, t, matmul(512, 512, 512));
  EXPECT_EQ(exact.match, "exact");
  EXPECT_EQ(exact.schedule, tiles(2, 2));
  EXPECT_DOUBLE_EQ(exact.time_us, 7);
  const BestAnswer near = best_or_nearest(db, t, matmul(600, 512, 512));
  EXPECT_EQ(near.match, "nearest");
  EXPECT_EQ(near.workload, matmul(512, 512, 512));
  EXPECT_GT(near.distance, 0);
  EXPECT_EQ(near.to_json().at("target_key"), t.key);
  try {
    best_or_nearest(db, t, matmul(512, 512, 512, "int8"));  // no workload of that dtype
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
  }
}

}  // namespace
}  // namespace atvoss::db
