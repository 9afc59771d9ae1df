// Chips a user brings, through atvoss-tune and atvoss-sim as real processes: the
// seed-format description and the 8x8 custom NPU from examples/targets/, the mlu370
// preset, a description that cannot be mapped (exit 2, the field named) and a part
// whose device memory the model does not fit (a warning; the job still tunes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_harness.hpp"

#include "core/json.hpp"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Result = atvoss::cli_test::CliResult;

const std::string kExamples = std::string(ATVOSS_SOURCE_DIR) + "/examples/targets/";
const char* kMatmul = R"({"op":"matmul","dims":{"M":512,"N":512,"K":512}})";

class ChipsCliTest : public atvoss::cli_test::CliTest {
 protected:
  // A short mlp job on target (a preset name or a file); returns atvoss-tune's result.
  Result tune_mlp(const std::string& name, const atvoss::Json& target) const {
    const atvoss::Json spec{{"name", name},
                            {"target", target},
                            {"model", "mlp"},
                            {"trials", 48},
                            {"batch_size", 8},
                            {"seed", 7},
                            {"strategy", "random"},
                            {"cost_model", "linear"},
                            {"database", file(name + ".db")},
                            {"export", file(name + "-table.json")},
                            {"report", file(name + ".html")}};
    return run_tool("atvoss-tune", quote(file(name + ".json", spec.dump(2))) + " --quiet");
  }
};

TEST_F(ChipsCliTest, SeedFormatDescriptionLoadsAndTunes) {
  const std::string target = quote(kExamples + "seed-format-910b.json");
  const Result space = run_tool("atvoss-sim", "space --json --target " + target + " --workload " + quote(kMatmul));
  ASSERT_EQ(space.code, 0) << space.err;
  EXPECT_GT(atvoss::Json::parse(space.out)["valid"].get<std::uint64_t>(), 0u);
  const Result r = run_tool("atvoss-tune", "--target " + target + " --workload " + quote(kMatmul) +
                                               " --trials 16 --strategy random --seed 1 --db " + quote(file("s.db")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("best time:"));
}

TEST_F(ChipsCliTest, Mlu370AndThe8x8CustomNpuTuneAJob) {
  for (const auto& [name, target] :
       {std::pair<std::string, atvoss::Json>{"mlu", "mlu370"}, {"edge", kExamples + "custom-npu-8x8.json"}}) {
    SCOPED_TRACE(name);
    const Result r = tune_mlp(name, target);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("end-to-end (the model plan: graph run): default"));
    EXPECT_THAT(r.out, HasSubstr("device memory: weights 1.0 MB"));
    EXPECT_THAT(r.err, Not(HasSubstr("warning")));
  }
  // The custom NPU's description has nothing the simulator ignores; the seed-format 910B does.
  const Result seed = tune_mlp("seed", kExamples + "seed-format-910b.json");
  ASSERT_EQ(seed.code, 0) << seed.err;
  EXPECT_THAT(seed.err, HasSubstr("note: the simulator ignores these fields of ascend910b-seed: "));
  EXPECT_THAT(seed.err, HasSubstr("architecture.scalar_units_per_core"));
  EXPECT_THAT(seed.err, HasSubstr("vendor"));
  EXPECT_THAT(seed.err, Not(HasSubstr("does not give these figures")));
  // The articles' short description: the figures it lacks are named with the values taken.
  const Result article = tune_mlp("article", kExamples + "article-simd-vector.json");
  ASSERT_EQ(article.code, 0) << article.err;
  EXPECT_THAT(article.err, HasSubstr("does not give these figures; the simulator takes: "));
  EXPECT_THAT(article.err, HasSubstr("clock_ghz = 1.8"));
}

TEST_F(ChipsCliTest, AnUnmappableDescriptionExits2NamingTheField) {
  auto j = atvoss::Json::parse(slurp(kExamples + "custom-npu-8x8.json"));
  j["architecture"]["core_type"] = "systolic";
  const std::string bad = quote(file("bad.json", j.dump()));
  const Result sim = run_tool("atvoss-sim", "space --target " + bad + " --workload " + quote(kMatmul));
  EXPECT_EQ(sim.code, 2);
  EXPECT_THAT(sim.err, HasSubstr("'architecture.core_type' must be \"coupled\""));
  const Result tune = run_tool(
      "atvoss-tune", "--target " + bad + " --workload " + quote(kMatmul) + " --trials 4 --db " + quote(file("b.db")));
  EXPECT_EQ(tune.code, 2);
  EXPECT_THAT(tune.err, HasSubstr("'architecture.core_type'"));
}

TEST_F(ChipsCliTest, AModelTooLargeForTheDeviceWarnsAndStillTunes) {
  auto j = atvoss::Json::parse(slurp(kExamples + "custom-npu-8x8.json"));
  j["memory"]["hierarchy"][0]["size"] = 1048576;  // 1 MB of DRAM: the mlp needs 1.2 MB
  const Result r = tune_mlp("tiny", file("tiny-npu.json", j.dump()));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: the model does not fit in edge-npu-8x8's device memory"));
  EXPECT_THAT(r.out, HasSubstr("of 1.0 MB device memory"));
  EXPECT_THAT(r.out, HasSubstr("does not fit"));
}

}  // namespace
