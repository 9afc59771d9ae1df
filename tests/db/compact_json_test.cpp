// The fast codec of stored schedule / repeats / profile text (db/internal/compact_json.hpp) must agree
// with nlohmann: the schedule bytes exactly (the schedule key hashes them), the numbers
// bit for bit, and anything outside the compact form must be refused (nullopt) so the
// caller falls back to the full parser and its error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/json.hpp"
#include "db/internal/compact_json.hpp"

namespace atvoss::db {
namespace {

TEST(CompactJson, ScheduleBytesMatchNlohmann) {
  const Schedule s({{"tile_m", 128},
                    {"async_copy_depth", 2},
                    {"k_steps", -3},
                    {"tile_order", std::numeric_limits<std::int64_t>::max()}});
  EXPECT_EQ(write_schedule(s).value(), s.to_json().dump());
  EXPECT_EQ(write_schedule(Schedule()).value(), Schedule().to_json().dump());
  EXPECT_EQ(read_schedule(s.to_json().dump()).value(), s);
  EXPECT_EQ(read_schedule("{}").value(), Schedule());
}

TEST(CompactJson, ScheduleOutsideTheCompactFormIsLeftToTheFullParser) {
  EXPECT_FALSE(write_schedule(Schedule({{"quo\"te", 1}})).has_value());
  EXPECT_FALSE(write_schedule(Schedule({{"caf\xc3\xa9", 1}})).has_value());
  EXPECT_FALSE(read_schedule(R"({"a":1.5})").has_value());
  EXPECT_FALSE(read_schedule(R"({"a":1e3})").has_value());
  EXPECT_FALSE(read_schedule(R"({"a":"1"})").has_value());
  EXPECT_FALSE(read_schedule(R"({"a":1,"a":2})").has_value());
  EXPECT_FALSE(read_schedule(R"({"a": 1})").has_value());
  EXPECT_FALSE(read_schedule(R"({"a":1,})").has_value());
  EXPECT_FALSE(read_schedule(R"({"a":99999999999999999999})").has_value());
  EXPECT_FALSE(read_schedule(R"([1])").has_value());
  EXPECT_FALSE(read_schedule("").has_value());
}

TEST(CompactJson, RepeatsRoundTripBitForBit) {
  const std::vector<double> r = {10.0, 10.1, 0.1 + 0.2, 1e-300, 123456789.125, -0.0, 5e22};
  const auto text = write_repeats(r).value();
  EXPECT_EQ(read_repeats(text).value(), r);
  std::vector<double> via_nlohmann;
  for (const auto& v : parse_json(text, "test")) via_nlohmann.push_back(v.get<double>());
  EXPECT_EQ(via_nlohmann, r);
  EXPECT_EQ(read_repeats(Json(r).dump()).value(), r);  // rows written by earlier builds
  EXPECT_EQ(write_repeats({}).value(), "[]");
  EXPECT_TRUE(read_repeats("[]").value().empty());
}

TEST(CompactJson, RepeatsOutsideTheCompactFormAreLeftToTheFullParser) {
  EXPECT_FALSE(write_repeats({std::nan("")}).has_value());
  EXPECT_FALSE(write_repeats({std::numeric_limits<double>::infinity()}).has_value());
  EXPECT_FALSE(read_repeats("[null]").has_value());
  EXPECT_FALSE(read_repeats("[1,]").has_value());
  EXPECT_FALSE(read_repeats("[inf]").has_value());
  EXPECT_FALSE(read_repeats("[1, 2]").has_value());
  EXPECT_FALSE(read_repeats("[1]x").has_value());
}

TEST(CompactJson, ProfileRoundTripsAndReadsEarlierRows) {
  Profile p;
  p.compute_us = 1.5;
  p.dma_us = 0.1 + 0.2;
  p.sync_wait_us = 3;
  p.launch_us = 4.25;
  p.l1_hit_rate = 0.9;
  p.dma_utilisation = 0.33;
  p.cube_utilisation = 0.77;
  p.gm_bytes = 1.5e9;
  p.peak_workspace_bytes = 262144;
  p.kernels = 3;
  p.compile_us = 125000;  // the host backend's compile time and timing variation
  p.time_cv = 0.02;
  const auto text = write_profile(p).value();
  EXPECT_EQ(read_profile(text)->to_json(), p.to_json());
  EXPECT_EQ(Profile::from_json(parse_json(text, "test")).to_json(), p.to_json());
  EXPECT_EQ(read_profile(p.to_json().dump())->to_json(), p.to_json());
  EXPECT_EQ(read_profile("{}")->to_json(), Profile().to_json());
}

TEST(CompactJson, ProfileOutsideTheCompactFormIsLeftToTheFullParser) {
  Profile p;
  p.gm_bytes = std::nan("");
  EXPECT_FALSE(write_profile(p).has_value());
  EXPECT_FALSE(read_profile(R"({"kernels":1.5})").has_value());
  EXPECT_FALSE(read_profile(R"({"unknown":1})").has_value());
  EXPECT_FALSE(read_profile(R"({"dma_us":null})").has_value());
  EXPECT_FALSE(read_profile(R"({"dma_us":{"x":1}})").has_value());
}

}  // namespace
}  // namespace atvoss::db
