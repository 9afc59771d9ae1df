#include "core/workload.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"

namespace atvoss {
namespace {

TEST(WorkloadTest, KeyIsStableAndIgnoresDefaultedFields) {
  auto a = Workload::from_json(
      parse_json(R"({"op":"conv2d","dims":{"N":1,"C":64,"H":56,"W":56,"K":64,"R":3,"S":3,"pad":1}})", "t"));
  auto b = Workload::from_json(parse_json(
      R"({"dims":{"pad":1,"stride":1,"S":3,"R":3,"K":64,"W":56,"H":56,"C":64,"N":1},"op":"conv2d","dtype":"float16","epilogue":[]})",
      "t"));
  EXPECT_EQ(a.key(), b.key());
  // Pinned: the key must not change across machines, compilers or releases.
  EXPECT_EQ(stable_key(parse_json(R"({"a":1})", "t")), "9c3e82dd6fcae8b1");
  EXPECT_EQ(a.out_h(), 56);
}

TEST(WorkloadTest, EpilogueOrderChangesKey) {
  auto a = Workload::from_json(
      parse_json(R"({"op":"matmul","dims":{"M":64,"N":64,"K":64},"epilogue":["bias","relu"]})", "t"));
  auto b = Workload::from_json(
      parse_json(R"({"op":"matmul","dims":{"M":64,"N":64,"K":64},"epilogue":["relu","bias"]})", "t"));
  EXPECT_NE(a.key(), b.key());
  EXPECT_DOUBLE_EQ(a.flops(), 2.0 * 64 * 64 * 64);
}

TEST(WorkloadTest, BadInputNamesTheField) {
  const struct {
    const char* name;
    const char* json;
    const char* expect;
  } kCases[] = {
      {"unknown_op", R"({"op":"fft","dims":{}})", "unknown op 'fft'"},
      {"zero_dim", R"({"op":"matmul","dims":{"M":0,"N":1,"K":1}})", "dim 'M'"},
      {"negative_dim", R"({"op":"matmul","dims":{"M":4,"N":-1,"K":1}})", "dim 'N'"},
      {"missing_dim", R"({"op":"matmul","dims":{"M":4,"N":1}})", "missing dim 'K'"},
      {"extra_dim", R"({"op":"matmul","dims":{"M":4,"N":1,"K":1,"Q":2}})", "no dim 'Q'"},
      {"string_dim", R"({"op":"matmul","dims":{"M":"4","N":1,"K":1}})", "dim 'M' must be an integer"},
      {"bad_dtype", R"({"op":"matmul","dtype":"fp8","dims":{"M":4,"N":1,"K":1}})", "'dtype'"},
      {"bad_epilogue", R"({"op":"matmul","dims":{"M":4,"N":1,"K":1},"epilogue":["swish"]})", "epilogue op 'swish'"},
      {"epilogue_on_softmax", R"({"op":"softmax","dims":{"M":4,"N":8},"epilogue":["relu"]})", "takes no epilogue"},
      {"not_object", R"([1,2])", "expected a JSON object"},
      {"unknown_field", R"({"op":"matmul","dims":{"M":4,"N":1,"K":1},"name":"x"})", "unknown field 'name'"},
      {"table_on_objective", R"({"op":"objective","table":"x.csv"})", "unknown field 'table' for op 'objective'"},
      {"objective_without_name", R"({"op":"objective"})", "field 'name'"},
      {"name_on_recorded", R"({"op":"recorded","table":"t.csv","name":"x"})", "unknown field 'name'"},
      {"kernel_too_big", R"({"op":"conv2d","dims":{"N":1,"C":1,"H":2,"W":2,"K":1,"R":5,"S":5}})", "larger than"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    try {
      Workload::from_json(parse_json(c.json, "t"));
      ADD_FAILURE() << "accepted bad workload";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_THAT(e.what(), testing::HasSubstr(c.expect));
    }
  }
}

// A user's objective (Python atvoss.Optimizer) is named, not a file: it round-trips, and its
// key differs from a recorded table's of the same text.
TEST(WorkloadTest, AnObjectiveIsNamedAndRoundTrips) {
  const Workload w = Workload::from_json(parse_json(R"({"op":"objective","name":"my_kernel"})", "t"));
  EXPECT_TRUE(w.is_objective());
  EXPECT_FALSE(w.is_recorded());
  EXPECT_EQ(w.to_json(), parse_json(R"({"op":"objective","name":"my_kernel"})", "t"));
  EXPECT_EQ(Workload::from_json(w.to_json()).key(), w.key());
  EXPECT_EQ(w.label(), "objective my_kernel");
  EXPECT_NE(Workload::from_json(parse_json(R"({"op":"recorded","table":"my_kernel"})", "t")).key(), w.key());
}

TEST(WorkloadTest, MalformedJsonIsBadInput) {
  try {
    parse_json("{\"op\": ", "workload");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_THAT(e.what(), testing::HasSubstr("invalid JSON"));
  }
}

}  // namespace
}  // namespace atvoss
