#include "core/json.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

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

TEST(JsonTest, MalformedTextNamesTheByte) {
  EXPECT_TRUE(refused(R"({"a": })", "invalid JSON at byte"));
}

}  // namespace
}  // namespace atvoss
