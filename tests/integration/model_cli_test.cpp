// atvoss-model as a process: train on a database filled by atvoss-tune, inspect the stored
// model, and refuse a file that is not a tuning database with exit code 2.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/json.hpp"

namespace atvoss {
namespace {

struct RunResult {
  int rc = -1;
  std::string out;
};

RunResult run(const std::string& cmd) {
  RunResult r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string bin(const std::string& tool) { return std::string(ATVOSS_BIN_DIR) + "/" + tool; }

class ModelCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("atvoss_model_cli_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(ModelCli, TrainsStoresAndInspectsAModel) {
  const std::string db = file("tune.db");
  const std::string w = R"('{"op":"matmul","dims":{"M":512,"N":512,"K":256}}')";
  ASSERT_EQ(run(bin("atvoss-tune") + " --target ascend910 --workload " + w +
                " --trials 48 --strategy random --seed 2 --quiet --db " + db).rc, 0);
  const RunResult train = run(bin("atvoss-model") + " train --json --db " + db + " --target ascend910");
  ASSERT_EQ(train.rc, 0) << train.out;
  const Json j = Json::parse(train.out);
  EXPECT_EQ(j.at("kind"), "xgboost");
  EXPECT_EQ(j.at("records"), 48);
  const double pairwise = j.at("metrics").at("pairwise").get<double>();
  EXPECT_GE(pairwise, 0.0);
  EXPECT_LE(pairwise, 1.0);

  const RunResult inspect = run(bin("atvoss-model") + " inspect --db " + db + " --target ascend910");
  ASSERT_EQ(inspect.rc, 0) << inspect.out;
  EXPECT_THAT(inspect.out, testing::HasSubstr("trained on 48 records"));
  EXPECT_THAT(inspect.out, testing::HasSubstr("tile_m"));
}

TEST_F(ModelCli, ForeignFileIsBadInputAndLeftAlone) {
  const std::string db = file("garbage.db");
  { std::FILE* f = std::fopen(db.c_str(), "w"); std::fputs("not sqlite at all\n", f); std::fclose(f); }
  const RunResult train = run(bin("atvoss-model") + " train --db " + db + " --target ascend910");
  EXPECT_EQ(train.rc, 2) << train.out;
  EXPECT_THAT(train.out, testing::HasSubstr("not an atvoss tuning database"));
  EXPECT_EQ(std::filesystem::file_size(db), 18u);
  EXPECT_EQ(run(bin("atvoss-model") + " train --db " + db).rc, 2);  // missing --target
}

}  // namespace
}  // namespace atvoss
