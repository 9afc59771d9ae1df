#include "core/measurement.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace atvoss {
namespace {

TEST(MeasurementTest, JsonRoundTrip) {
  Measurement m;
  m.time_us = 12.5;
  m.repeats = {12, 12.5, 13};
  m.profile.l1_hit_rate = 0.75;
  m.profile.kernels = 3;
  auto back = Measurement::from_json(parse_json(m.to_json().dump(), "t"));
  EXPECT_EQ(back.status, Status::ok);
  EXPECT_DOUBLE_EQ(back.time_us, 12.5);
  EXPECT_EQ(back.repeats.size(), 3u);
  EXPECT_DOUBLE_EQ(back.profile.l1_hit_rate, 0.75);
  EXPECT_EQ(back.profile.kernels, 3);
}

TEST(MeasurementTest, TaxonomyKeepsKindsApart) {
  for (Status s : {Status::invalid, Status::compile_error, Status::runtime_error,
                   Status::wrong_answer, Status::timeout}) {
    EXPECT_TRUE(is_candidate_error(s));
    EXPECT_FALSE(is_infrastructure_error(s));
    EXPECT_EQ(parse_status(to_string(s)), s);
  }
  for (Status s : {Status::worker_lost, Status::session_timeout, Status::error}) {
    EXPECT_TRUE(is_infrastructure_error(s));
    EXPECT_FALSE(is_candidate_error(s));
  }
  EXPECT_THROW(parse_status("exploded"), Error);
}

TEST(MeasurementTest, Median) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

}  // namespace
}  // namespace atvoss
