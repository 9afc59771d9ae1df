#include "core/measurement.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "core/error.hpp"
#include "core/result_check.hpp"

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

// Results no run can produce: each is refused with the field named, from JSON and by check_result().
TEST(MeasurementTest, ImpossibleResultsAreRefusedNamingTheField) {
  const struct {
    const char* json;
    const char* field;
  } cases[] = {
      {R"({"status":"ok","time_us":-5,"repeats":[]})", "'time_us'"},
      {R"({"status":"ok","time_us":0})", "'time_us'"},
      {R"({"status":"ok","time_us":5,"repeats":[4,6,-1]})", "'repeats'"},
      {R"({"status":"ok","time_us":50,"repeats":[4,5,6]})", "'time_us' (50)"},
      {R"({"status":"ok","time_us":1,"repeats":[4,5,6]})", "between the smallest"},
      {R"({"status":"compile_error","repeats":[0]})", "'repeats'"},
      // Below a nanosecond or beyond 11 days: no kernel (an import of 1e-300 became the best).
      {R"({"status":"ok","time_us":1e-300,"repeats":[1e-300]})", "'repeats' must hold times from 0.001"},
      {R"({"status":"ok","time_us":1e-300})", "'time_us' must be a time from 0.001"},
      {R"({"status":"ok","time_us":2e12})", "'time_us'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.json);
    try {
      Measurement::from_json(parse_json(c.json, "t"));
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_input);
      EXPECT_NE(std::string(e.what()).find(c.field), std::string::npos) << e.what();
    }
  }
  Measurement inf;
  inf.time_us = std::numeric_limits<double>::infinity();
  EXPECT_THROW(check_result(inf), Error);
  // A median, a mean and a result without repeats are all fine.
  EXPECT_NO_THROW(Measurement::from_json(parse_json(R"({"status":"ok","time_us":5,"repeats":[4,6]})", "t")));
  EXPECT_NO_THROW(Measurement::from_json(parse_json(R"({"status":"ok","time_us":4.5,"repeats":[4,4,5.5]})", "t")));
  EXPECT_NO_THROW(Measurement::from_json(parse_json(R"({"status":"ok","time_us":7})", "t")));
  EXPECT_NO_THROW(Measurement::from_json(parse_json(R"({"status":"timeout"})", "t")));
}

TEST(MeasurementTest, TaxonomyKeepsKindsApart) {
  for (Status s :
       {Status::invalid, Status::compile_error, Status::runtime_error, Status::wrong_answer, Status::timeout}) {
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
