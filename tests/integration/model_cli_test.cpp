// atvoss-model as a process: train on a database filled by atvoss-tune, inspect the stored
// model, and refuse a file that is not a tuning database with exit code 2.
#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_harness.hpp"
#include "core/json.hpp"

namespace atvoss {
namespace {

using cli_test::CliResult;

class ModelCli : public cli_test::CliTest {};

TEST_F(ModelCli, TrainsStoresAndInspectsAModel) {
  const std::string db = quote(file("tune.db"));
  const std::string w = quote(R"({"op":"matmul","dims":{"M":512,"N":512,"K":256}})");
  const CliResult tune = run_tool("atvoss-tune", "--target ascend910 --workload " + w +
                                                     " --trials 48 --strategy random --seed 2 --quiet --db " + db);
  ASSERT_EQ(tune.code, 0) << tune.err;
  const CliResult train = run_tool("atvoss-model", "train --json --db " + db + " --target ascend910");
  ASSERT_EQ(train.code, 0) << train.err;
  const Json j = Json::parse(train.out);
  EXPECT_EQ(j.at("kind"), "xgboost");
  EXPECT_EQ(j.at("records"), 48);
  const double pairwise = j.at("metrics").at("pairwise").get<double>();
  EXPECT_GE(pairwise, 0.0);
  EXPECT_LE(pairwise, 1.0);

  const CliResult inspect = run_tool("atvoss-model", "inspect --db " + db + " --target ascend910");
  ASSERT_EQ(inspect.code, 0) << inspect.err;
  EXPECT_THAT(inspect.out, testing::HasSubstr("trained on 48 records"));
  EXPECT_THAT(inspect.out, testing::HasSubstr("tile_m"));
}

TEST_F(ModelCli, ForeignFileIsBadInputAndLeftAlone) {
  const std::string db = file("garbage.db", "not sqlite at all\n");
  const CliResult train = run_tool("atvoss-model", "train --db " + quote(db) + " --target ascend910");
  EXPECT_EQ(train.code, 2) << train.err;
  EXPECT_THAT(train.err, testing::HasSubstr("not an atvoss tuning database"));
  EXPECT_EQ(std::filesystem::file_size(db), 18u);
  EXPECT_EQ(run_tool("atvoss-model", "train --db " + quote(db)).code, 2);  // missing --target
}

}  // namespace
}  // namespace atvoss
