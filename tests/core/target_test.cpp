#include "core/target.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/launch_mode.hpp"

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
      {"zero_cores", "ai_cores", 0, "'ai_cores' must be an integer in 1..4096"},
      {"cores_beyond_int", "ai_cores", 2147483648LL, "'ai_cores' must be an integer in 1..4096, got 2147483648"},
      {"cores_beyond_int64", "vector_cores", 18446744073709551615ULL, "got 18446744073709551615"},
      {"absurd_clock", "clock_ghz", 1e300, "'clock_ghz' must be > 0 and <= 100"},
      {"negative_latency", "hbm_latency_cycles", -3, "'hbm_latency_cycles' must be >= 0"},
      {"huge_buffer", "l1_bytes", 1LL << 50, "'l1_bytes' must be an integer in 1..1099511627776"},
      {"zero_launch", "launch_us", 0, "'launch_us' must be > 0"},
      {"nan_as_text", "fp32_rate", "NaN", "'fp32_rate' must be a number"},
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

// Every numeric field has a range: its documented bounds are accepted, a step past either
// bound is refused naming the field.
TEST(TargetTest, EveryNumericFieldHasBounds) {
  int fields = 0;
  const Json full = full_target();
  for (const auto& [name, value] : full.items()) {
    if (!value.is_number()) continue;
    ++fields;
    SCOPED_TRACE(name);
    Json huge = full_target();
    huge[name] = value.is_number_integer() ? Json(std::int64_t{1} << 62) : Json(1e200);
    EXPECT_THROW(Target::from_json(huge), Error);
    Json negative = full_target();
    negative[name] = -1;
    try {
      Target::from_json(negative);
      ADD_FAILURE() << "accepted -1";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), testing::HasSubstr("'" + name + "'"));
    }
  }
  EXPECT_EQ(fields, 31);  // device_memory_bytes, fma_chains and sunk_launch_us included
}

// fma_chains (a CPU's measured FMA chains) may be left out; given, it changes the key, left at
// 0 it does not, so the keys of targets described before it existed stay the same.
TEST(TargetTest, FmaChainsIsOptionalAndKeysOnlyWhenGiven) {
  Json without = full_target();
  without.erase("fma_chains");
  const Target plain = Target::from_json(without);
  EXPECT_EQ(plain.fma_chains, 0);
  Json zero = full_target();
  zero["fma_chains"] = 0;
  EXPECT_EQ(Target::from_json(zero).key(), plain.key());
  Json eight = full_target();
  eight["fma_chains"] = 8;
  const Target cpu = Target::from_json(eight);
  EXPECT_EQ(cpu.fma_chains, 8);
  EXPECT_NE(cpu.key(), plain.key());
  EXPECT_EQ(Target::from_json(cpu.to_json()).key(), cpu.key());
}

// A sunk graph (core/launch_mode.hpp): sunk_launch_us is optional and unkeyed, a host
// target's key is as before it existed; launched() gives the sunk target its own key and
// launch cost, and refuses a part that gives none. A target described sunk reads back only
// with launch_us equal to sunk_launch_us.
TEST(TargetTest, ASunkGraphHasItsOwnLaunchCostAndKey) {
  Json without = full_target();
  without.erase("sunk_launch_us");
  without.erase("launch");
  const Target plain = Target::from_json(without);
  Json given = full_target();
  given["sunk_launch_us"] = 1.0;
  const Target t = Target::from_json(given);
  EXPECT_EQ(t.key(), plain.key());
  EXPECT_EQ(launch_mode_of(t), LaunchMode::host);
  EXPECT_EQ(launched(t, LaunchMode::host, "f").key(), t.key());
  const Target sunk = launched(t, LaunchMode::sunk, "f");
  EXPECT_EQ(sunk.launch_us, 1.0);
  EXPECT_EQ(sunk.name, t.name + "-sunk");
  EXPECT_EQ(launch_mode_of(sunk), LaunchMode::sunk);
  EXPECT_NE(sunk.key(), t.key());
  Json other = given;
  other["launch_us"] = 1.0;  // a host part that happens to launch in 1 us is not a sunk graph
  EXPECT_NE(Target::from_json(other).key(), sunk.key());
  EXPECT_EQ(Target::from_json(sunk.to_json()).key(), sunk.key());
  EXPECT_THROW(launched(sunk, LaunchMode::host, "f"), Error);
  try {
    launched(plain, LaunchMode::sunk, "job spec: field 'launch'");
    ADD_FAILURE() << "a part without sunk_launch_us ran sunk";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_THAT(e.what(), testing::HasSubstr("job spec: field 'launch'"));
    EXPECT_THAT(e.what(), testing::HasSubstr("sunk_launch_us"));
  }
  for (const Json& bad : {Json("graph"), Json(1)}) {
    Json j = given;
    j["launch"] = bad;
    EXPECT_THROW(Target::from_json(j), Error);
  }
  Json inconsistent = given;
  inconsistent["launch"] = "sunk";  // launch_us still the host's
  EXPECT_THROW(Target::from_json(inconsistent), Error);
  EXPECT_EQ(launch_mode_named("sunk", "f"), LaunchMode::sunk);
  EXPECT_THROW(launch_mode_named("device", "f"), Error);
}

// matrix_dtypes (what the matrix unit runs) is optional, round-trips, is checked by name and
// is not part of the key: it changes which precision a job takes, not a kernel's time.
TEST(TargetTest, MatrixDtypesAreOptionalCheckedAndNotKeyed) {
  const Target plain = Target::from_json(full_target());
  EXPECT_TRUE(plain.matrix_dtypes.empty());
  EXPECT_TRUE(plain.supports(DType::bfloat16));  // not stated: anything goes
  Json listed = full_target();
  listed["matrix_dtypes"] = {"float16", "int8"};
  const Target t = Target::from_json(listed);
  EXPECT_TRUE(t.supports(DType::int8));
  EXPECT_FALSE(t.supports(DType::bfloat16));
  EXPECT_EQ(t.key(), plain.key());
  EXPECT_EQ(Target::from_json(t.to_json()).matrix_dtypes, t.matrix_dtypes);
  for (const Json& bad : {Json("float16"), Json({"float16", "fp8"}), Json({1})}) {
    Json j = full_target();
    j["matrix_dtypes"] = bad;
    try {
      Target::from_json(j);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), testing::HasSubstr("'matrix_dtypes'"));
    }
  }
}

TEST(TargetTest, FieldBeyondDoubleInTheTextIsNamed) {
  std::string text = full_target().dump();
  const auto at = text.find("\"clock_ghz\":1.0");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 15, "\"clock_ghz\":1e400");
  try {
    Target::from_json(parse_json(text, "target.json"));
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_THAT(e.what(), testing::HasSubstr("field 'clock_ghz'"));
  }
}

}  // namespace
}  // namespace atvoss
