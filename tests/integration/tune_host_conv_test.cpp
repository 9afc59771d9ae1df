// atvoss-tune on host convolutions as a user runs it: a conv2d and a depthwise_conv2d
// workload tuned end to end (real compiles, the real runner), with the model-guided search
// whose cost model lowers the host conv schedules; the exported table holds them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include "cli_harness.hpp"
#include "core/json.hpp"

namespace atvoss::cli_test {
namespace {

using ::testing::HasSubstr;

class TuneHostConvCli : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ::setenv("XDG_CACHE_HOME", ATVOSS_BIN_DIR "/../test-cache", 1);
  }
};

TEST_F(TuneHostConvCli, TunesAConvAndADepthwiseConv) {
  const Json spec = {
      {"name", "tiny-host-convs"},
      {"target", "host"},
      {"workloads",
       Json::array(
           {Json{
                {"workload",
                 Json::parse(
                     R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":16,"H":10,"W":10,"K":24,"R":3,"S":3,"stride":1,"pad":1},"epilogue":["batchnorm","relu"]})")}},
            Json{
                {"workload",
                 Json::parse(
                     R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":32,"H":9,"W":9,"R":3,"S":3,"stride":2,"pad":1},"epilogue":["bias","relu"]})")}}})},
      {"trials", 12},
      {"batch_size", 4},
      {"strategy", "model-guided"},
      {"seed", 5},
      {"database", file("conv.db")},
      {"export", file("conv-table.json")}};
  const CliResult r = run_tool("atvoss-tune", quote(file("conv.json", spec.dump())) + " --quiet");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string table = slurp(file("conv-table.json"));
  EXPECT_THAT(table, HasSubstr("depthwise_conv2d")) << table;  // both tasks got trials and a best
  EXPECT_THAT(table, HasSubstr("\"conv2d\"")) << table;
  EXPECT_THAT(table, HasSubstr("tile_h")) << table;
  EXPECT_THAT(table, HasSubstr("host-")) << table;
}

TEST_F(TuneHostConvCli, AConvTheHostCannotGenerateIsBadInput) {
  const CliResult r = run_tool(
      "atvoss-tune",
      "--target host --trials 2 --db " + file("x.db") + " --workload " +
          quote(
              R"({"op":"group_conv2d","dtype":"float32","dims":{"N":1,"C":8,"H":8,"W":8,"K":8,"R":3,"S":3,"groups":2}})"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("group_conv2d"));
}

}  // namespace
}  // namespace atvoss::cli_test
