#include "core/json.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/schedule.hpp"

namespace atvoss {
namespace {

bool refused(const std::string& text, const std::string& expected_fragment) {
  try {
    parse_json(text, "spec");
  } catch (const Error& e) {
    return e.is_bad_input() && std::string(e.what()).find(expected_fragment) != std::string::npos;
  }
  return false;
}

TEST(JsonTest, DuplicateKeysAreRefusedAtAnyDepth) {
  EXPECT_TRUE(refused(R"({"trials": 10, "trials": 20})", "key 'trials' appears twice"));
  EXPECT_TRUE(refused(R"({"a": {"x": 1, "x": 2}})", "key 'x' appears twice"));
  // The same key in sibling objects is fine.
  EXPECT_EQ(parse_json(R"([{"x": 1}, {"x": 2}])", "spec").size(), 2u);
  EXPECT_EQ(parse_json(R"({"a": {"x": 1}, "x": 2})", "spec")["x"], 2);
}

TEST(JsonTest, DeepNestingIsRefusedNotRecursedInto) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_TRUE(refused(deep, "nesting deeper than 256"));
  const std::string ok = std::string(200, '[') + std::string(200, ']');
  EXPECT_NO_THROW(parse_json(ok, "spec"));
}

// Found by the frame fuzzer (rpc/fuzz/corpus/regression-number-overflow): a number beyond
// double escaped as nlohmann's out_of_range, past every handler, and aborted the process.
TEST(JsonTest, NumberBeyondDoubleIsBadInputNotAnAbort) {
  EXPECT_TRUE(refused(R"({"clock_ghz": 1e400})", "spec in field 'clock_ghz':"));
  EXPECT_TRUE(refused("1111111111111110E01110", "spec:"));
}

// nlohmann's get<T>() wraps or truncates: 2^64-1 as an int64 knob was -1, 2^32+4 as an int 4.
TEST(JsonTest, IntegersOutsideTheirTypeAreNamedNotWrapped) {
  auto message = [](auto read) {
    try {
      read();
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const Json j =
      parse_json(R"({"big": 18446744073709551615, "wide": 4294967300, "neg": -1, "half": 2.5, "ok": 7})", "spec");
  EXPECT_EQ(
      message([&] { integer_as<std::int64_t>(j["big"], "big", "spec"); }),
      "spec: field 'big' must be an integer in -9223372036854775808..9223372036854775807, got 18446744073709551615");
  EXPECT_EQ(message([&] { integer_as<int>(j["wide"], "wide", "spec"); }),
            "spec: field 'wide' must be an integer in -2147483648..2147483647, got 4294967300");
  EXPECT_EQ(message([&] { integer_as<std::uint64_t>(j["neg"], "neg", "spec"); }),
            "spec: field 'neg' must be an integer in 0..18446744073709551615, got -1");
  EXPECT_NE(message([&] { integer_as<int>(j["half"], "half", "spec"); }).find("must be an integer"), std::string::npos);
  EXPECT_EQ(integer_as<std::uint64_t>(j["big"], "big", "spec"), 18446744073709551615u);
  EXPECT_EQ(integer_as<int>(j["ok"], "ok", "spec"), 7);
  EXPECT_EQ(message([&] { require_int(j, "big", "spec"); }).find("spec: field 'big' must be an integer in"), 0u);
  EXPECT_NE(message([&] {
              Schedule::from_json(Json{{"tile_m", 18446744073709551615u}});
            }).find("field 'tile_m'"),
            std::string::npos);
}

TEST(JsonTest, MalformedTextNamesTheByte) { EXPECT_TRUE(refused(R"({"a": })", "invalid JSON at byte")); }

}  // namespace
}  // namespace atvoss
