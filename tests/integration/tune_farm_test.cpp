// atvoss-tune --farm: a batch job measured on a real loopback farm (atvoss-farm plus
// one atvoss-worker, as processes), stored with the farm as the worker.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/json.hpp"

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

pid_t spawn(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (!freopen("/dev/null", "w", stderr)) _exit(127);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

void stop(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

// A loopback farm (atvoss-farm and one atvoss-worker for ascend910, as processes) for a test.
class TuneFarm : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("atvoss-tune-farm-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    const auto port_file = dir_ / "port.json";
    farm_ = spawn({bin_ + "/atvoss-farm", "--port", "0", "--port-file", port_file.string(), "--quiet"});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!fs::exists(port_file) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(fs::exists(port_file)) << "atvoss-farm did not start";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // port file fully written
    const int port = atvoss::parse_json(slurp(port_file), "port file")["port"].get<int>();
    address_ = "127.0.0.1:" + std::to_string(port);
    worker_ = spawn({bin_ + "/atvoss-worker", "--farm", address_, "--target", "ascend910", "--slots", "2", "--quiet"});
  }
  void TearDown() override {
    stop(worker_);
    stop(farm_);
    fs::remove_all(dir_);
  }

  // atvoss-tune on spec through the farm: its exit status; stdout in dir_/out, stderr in dir_/err.
  int tune(atvoss::Json spec) const {
    spec["database"] = (dir_ / "farm.db").string();
    spec["export"] = (dir_ / "table.json").string();
    spec["report"] = (dir_ / "report.html").string();
    std::ofstream(dir_ / "job.json") << spec.dump();
    const std::string cmd = bin_ + "/atvoss-tune " + (dir_ / "job.json").string() + " --quiet --json --farm " +
                            address_ + " >" + (dir_ / "out").string() + " 2>" + (dir_ / "err").string();
    return std::system(cmd.c_str());
  }
  // One column of the records the farm measured, a line per record (read with sqlite3).
  std::string farm_records(const std::string& column) const {
    const std::string sql = "sqlite3 " + (dir_ / "farm.db").string() + " \"SELECT " + column +
                            " FROM records WHERE worker LIKE 'farm:%'\" > " + (dir_ / "sql").string() + " 2>/dev/null";
    EXPECT_EQ(std::system(sql.c_str()), 0) << "sqlite3 (scripts/setup.sh installs it)";
    return slurp(dir_ / "sql");
  }

  const std::string bin_ = ATVOSS_BIN_DIR;
  fs::path dir_;
  std::string address_;
  pid_t farm_ = 0, worker_ = 0;
};

TEST_F(TuneFarm, JobMeasuredOnAFarm) {
  const int status = tune({{"name", "farmjob"},
                           {"target", "ascend910"},
                           {"model", "mlp"},
                           {"trials", 24},
                           {"strategy", "random"},
                           {"batch_size", 8}});
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir_ / "err");
  const auto out = atvoss::parse_json(slurp(dir_ / "out"), "stdout");
  EXPECT_EQ(out["measured"], 24);
  EXPECT_EQ(farm_records("COUNT(*)"), "24\n");
}

// A worker started for ascend910 serves its sunk graph too: a sunk job's tasks, under their
// own target key, are measured there with the sunk launch cost (1 us a kernel, not 5).
TEST_F(TuneFarm, ASunkJobIsMeasuredOnTheSameWorkers) {
  const int status = tune({{"name", "sunkjob"},
                           {"target", "ascend910"},
                           {"launch", "sunk"},
                           {"model", "mlp"},
                           {"trials", 16},
                           {"strategy", "random"},
                           {"batch_size", 8}});
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir_ / "err");
  const auto out = atvoss::parse_json(slurp(dir_ / "out"), "stdout");
  EXPECT_EQ(out["measured"], 16);
  EXPECT_EQ(out["launch"]["mode"], "sunk");
  EXPECT_EQ(farm_records("DISTINCT json_extract(profile, '$.launch_us') / json_extract(profile, '$.kernels')"), "1\n");
}

// The job's declared rule fuses the whole chain at fusion_level 1, where the built-ins fuse
// bias only: the worker lowers each item under the rule the job sent with it, so every
// fusion_level 1 schedule the farm measured ran as one kernel (without the rule, three).
TEST_F(TuneFarm, AJobsDeclaredFusionRulesAreInForceOnTheFarmsWorkers) {
  const atvoss::Json matmul = {
      {"op", "matmul"}, {"dims", {{"M", 256}, {"N", 256}, {"K", 256}}}, {"epilogue", {"bias", "batchnorm", "relu"}}};
  const atvoss::Json rule = {
      {"name", "test-whole-chain"}, {"pattern", {"matmul", "bias", "batchnorm", "relu"}}, {"max_fusion_depth", 3}};
  const int status = tune({{"name", "rulejob"},
                           {"target", "ascend910"},
                           {"workloads", atvoss::Json::array({{{"workload", matmul}}})},
                           {"trials", 32},
                           {"strategy", "random"},
                           {"batch_size", 8},
                           {"seed", 3},
                           {"fusion_rules", atvoss::Json::array({rule})}});
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir_ / "err");
  const std::string kernels = farm_records(
      "DISTINCT json_extract(profile, '$.kernels') || ' at level ' || "
      "json_extract(schedule, '$.fusion_level')");
  ASSERT_FALSE(kernels.empty()) << "sqlite3 (scripts/setup.sh installs it) read nothing";
  EXPECT_THAT(kernels, ::testing::HasSubstr("1 at level 1"));
  EXPECT_THAT(kernels, ::testing::Not(::testing::HasSubstr("3 at level 1")));
}

}  // namespace
