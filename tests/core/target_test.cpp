#include "core/target.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"

namespace atvoss {
namespace {

Json full_target() {
  Target t;
  t.name = "toy";
  t.ai_cores = 2;
  t.vector_cores = 2;
  t.l0a_bytes = t.l0b_bytes = 64 << 10;
  t.l0c_bytes = 256 << 10;
  t.l1_bytes = 1 << 20;
  t.ub_bytes = 256 << 10;
  t.l2_bytes = 8 << 20;
  t.hbm_bytes_per_cycle = 100;
  t.mte2_bytes_per_cycle = 32;
  t.mte1_a_bytes_per_cycle = 512;
  t.mte1_b_bytes_per_cycle = 256;
  t.mte3_bytes_per_cycle = 32;
  t.launch_us = 5;
  return t.to_json();
}

TEST(TargetTest, RoundTripsAndKeyIgnoresSourceNotes) {
  Json j = full_target();
  Target t = Target::from_json(j);
  EXPECT_EQ(t.to_json(), j);
  Json annotated = j;
  annotated["source"] = {{"clock_ghz", "est."}};
  EXPECT_EQ(Target::from_json(annotated).key(), t.key());
  j["ai_cores"] = 3;
  EXPECT_NE(Target::from_json(j).key(), t.key());
  EXPECT_DOUBLE_EQ(t.peak_flops(DType::float16), 2.0 * 4096 * 2 * 1e9);
}

TEST(TargetTest, EveryBadFieldIsNamed) {
  const struct {
    const char* name;
    const char* field;
    Json value;  // null = remove the field
    const char* expect;
  } kCases[] = {
      {"missing", "l1_bytes", nullptr, "missing field 'l1_bytes'"},
      {"mistyped", "clock_ghz", "fast", "'clock_ghz' must be a number"},
      {"negative", "hbm_bytes_per_cycle", -1, "'hbm_bytes_per_cycle' must be > 0"},
      {"fractional_int", "ai_cores", 2.5, "'ai_cores' must be an integer"},
      {"zero_cores", "ai_cores", 0, "'ai_cores' must be a positive integer"},
      {"organisation", "organisation", "fused", "'organisation'"},
      {"unknown", "warp_size", 32, "unknown field 'warp_size'"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    Json j = full_target();
    if (c.value.is_null()) {
      j.erase(c.field);
    } else {
      j[c.field] = c.value;
    }
    try {
      Target::from_json(j);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_THAT(e.what(), testing::HasSubstr(c.expect));
    }
  }
}

}  // namespace
}  // namespace atvoss
