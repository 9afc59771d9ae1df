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

TEST(TuneFarm, JobMeasuredOnAFarm) {
  const fs::path dir = fs::temp_directory_path() / ("atvoss-tune-farm-" + std::to_string(::getpid()) + "-" +
                                                    std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const std::string bin = ATVOSS_BIN_DIR;
  const auto port_file = dir / "port.json";
  const pid_t farm = spawn({bin + "/atvoss-farm", "--port", "0", "--port-file", port_file.string(), "--quiet"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!fs::exists(port_file) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!fs::exists(port_file)) {
    stop(farm);
    fs::remove_all(dir);
    FAIL() << "atvoss-farm did not start";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // port file fully written
  const int port = atvoss::parse_json(slurp(port_file), "port file")["port"].get<int>();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const pid_t worker =
      spawn({bin + "/atvoss-worker", "--farm", address, "--target", "ascend910", "--slots", "2", "--quiet"});
  const atvoss::Json spec{{"name", "farmjob"},
                          {"target", "ascend910"},
                          {"model", "mlp"},
                          {"trials", 24},
                          {"strategy", "random"},
                          {"batch_size", 8},
                          {"database", (dir / "farm.db").string()},
                          {"export", (dir / "table.json").string()},
                          {"report", (dir / "report.html").string()}};
  std::ofstream(dir / "job.json") << spec.dump();
  const std::string cmd = bin + "/atvoss-tune " + (dir / "job.json").string() + " --quiet --json --farm " + address +
                          " >" + (dir / "out").string() + " 2>" + (dir / "err").string();
  const int status = std::system(cmd.c_str());
  const std::string sql = "sqlite3 " + (dir / "farm.db").string() +
                          " \"SELECT COUNT(*) FROM records WHERE worker LIKE 'farm:%'\" > " + (dir / "sql").string() +
                          " 2>/dev/null";
  const bool have_sqlite = std::system(sql.c_str()) == 0;
  stop(worker);
  stop(farm);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir / "err");
  const auto out = atvoss::parse_json(slurp(dir / "out"), "stdout");
  EXPECT_EQ(out["measured"], 24);
  if (have_sqlite) EXPECT_EQ(slurp(dir / "sql"), "24\n");
  fs::remove_all(dir);
}

}  // namespace
