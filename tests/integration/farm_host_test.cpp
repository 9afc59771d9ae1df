// A host farm with real processes on loopback: atvoss-worker --backend host serves this
// machine's fingerprint; host work goes only to a worker of that fingerprint (a worker that
// announces another CPU, through the test-only ATVOSS_TEST_MACHINE_ROOT, gets none); a host
// worker's slots stop at its physical cores; a worker given another CPU's host target exits 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "cli_harness.hpp"
#include "farm_harness.hpp"
#include "host/host_space.hpp"
#include "host/machine.hpp"
#include "rpc/frame.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::farm_test {
namespace {

using ::testing::HasSubstr;

// Calibration and compiled kernels stay in the build tree, shared with the other host tests.
const std::map<std::string, std::string> kCache{{"XDG_CACHE_HOME", std::string(ATVOSS_BIN_DIR) + "/../test-cache"}};

std::map<std::string, std::string> env_with(std::map<std::string, std::string> extra) {
  extra.insert(kCache.begin(), kCache.end());
  return extra;
}

// A machine root for ATVOSS_TEST_MACHINE_ROOT: another CPU model with this machine's SIMD
// flags (so its kernels would still run here) and `cores` physical cores.
std::string fake_machine(const TempDir& dir, int cores) {
  const std::string root = dir.file("fake-machine");
  std::filesystem::create_directories(root + "/proc");
  std::filesystem::create_directories(root + "/sys/devices/system/cpu");
  std::string flags;
  for (const std::string& f : host::this_machine().simd_flags) flags += " " + f;
  std::ofstream cpuinfo(root + "/proc/cpuinfo");
  for (int c = 0; c < cores; ++c) {
    cpuinfo << "processor\t: " << c << "\nmodel name\t: atvoss farm-test CPU\nphysical id\t: 0\ncore id\t\t: " << c
            << "\nflags\t\t:" << flags << "\n\n";
  }
  return root;
}

Child start_host_worker(std::uint16_t port, std::vector<std::string> extra = {},
                        const std::map<std::string, std::string>& env = kCache) {
  std::vector<std::string> argv{bin("atvoss-worker"), "--farm", "127.0.0.1:" + std::to_string(port),
                                "--backend",          "host",   "--quiet"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return Child(argv, env);
}

const Workload kMatmul = Workload::from_json(
    Json{{"op", "matmul"}, {"dtype", "float32"}, {"dims", {{"M", 16}, {"N", 24}, {"K", 16}}}, {"epilogue", {"relu"}}});

// The default and two other valid host schedules of kMatmul, as farm requests for this CPU.
std::vector<rpc::FarmRequest> host_requests() {
  const host::MachineInfo& m = host::this_machine();
  const ScheduleSpace space = host::space_for(kMatmul, m);
  std::vector<Schedule> schedules{host::default_schedule(kMatmul, m)};
  std::mt19937_64 rng(5);
  for (int tries = 0; schedules.size() < 3 && tries < 1000; ++tries) {
    if (const auto p = space.random_valid_point(rng)) {
      const Schedule s = space.schedule_at(*p);
      if (std::find(schedules.begin(), schedules.end(), s) == schedules.end()) schedules.push_back(s);
    }
  }
  std::vector<rpc::FarmRequest> out;
  for (const Schedule& s : schedules) {
    out.push_back(rpc::FarmRequest{m.target_name(), kMatmul.to_json(), s.to_json(), 1, 3});
  }
  return out;
}

TEST(FarmHostTest, TheHostWorkerOfThisCpuMeasuresHostWork) {
  TempDir dir;
  Farm farm = start_farm(dir);
  Child worker = start_host_worker(farm.port);
  wait_for_workers(farm.port, 1, 60s);  // the first start may calibrate the machine
  const Json w = farm_stats(farm.port).at("workers").at(0);
  EXPECT_EQ(w.at("targets"), Json::array({host::this_machine().target_name()}));
  EXPECT_EQ(w.at("backends"), Json::array({"host"}));
  EXPECT_EQ(w.at("slots"), host::this_machine().physical_cores);  // the default: one per core

  rpc::FarmClientOptions options;
  options.farm = rpc::Endpoint{"127.0.0.1", farm.port};
  rpc::FarmClient client(options);
  const std::vector<rpc::FarmRequest> requests = host_requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const Measurement& m : client.measure(requests)) {
    EXPECT_TRUE(m.ok()) << m.message;
    EXPECT_GT(m.time_us, 0);
    EXPECT_GT(m.profile.cube_utilisation, 0);  // a fraction of the measured peak
  }
}

// The farm routes by farm_target_key: a host target's is its fingerprint name.
TEST(FarmHostTest, HostWorkWaitsForAWorkerOfItsFingerprint) {
  TempDir dir;
  Farm farm = start_farm(dir);
  Child other = start_host_worker(farm.port, {}, env_with({{host::kTestMachineRootEnv, fake_machine(dir, 1)}}));
  // The key from the stats that showed the worker, not from a second query: a worker listed once
  // may be between sessions by the next one.
  const Json registered = wait_for_stats(
      farm.port,
      [](const Json& st) { return !st.at("workers").empty() && !st.at("workers").at(0).at("targets").empty(); },
      "the other CPU's worker registered with its target", 60s);
  const std::string other_key = registered.at("workers").at(0).at("targets").at(0).get<std::string>();
  ASSERT_THAT(other_key, HasSubstr("host-"));
  ASSERT_NE(other_key, host::this_machine().target_name());

  // Submit on a raw client channel, then ask for the stats on the same connection: the farm
  // handles one connection's messages in order and dispatches at submit, so the stats show
  // where the task went.
  rpc::ChannelOptions o;
  o.role = rpc::Role::client;
  auto client = rpc::Channel::open(rpc::Endpoint{"127.0.0.1", farm.port}, o);
  const rpc::FarmRequest r = host_requests().front();
  const Json body =
      rpc::encode_body(Json{{"workload", r.workload}, {"schedule", r.schedule}, {"repeat", 1}, {"seed", 3}});
  client->send(
      Json{{"type", "submit"}, {"items", Json::array({Json{{"id", 1}, {"target", r.target_key}, {"request", body}}})}});
  client->send(Json{{"type", "stats"}});
  std::optional<Json> stats;
  for (int i = 0; i < 100 && !stats; ++i) {
    if (auto m = client->receive(100ms); m && m->at("type") == "stats") stats = m->at("stats");
  }
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->at("queue_depth"), 1);
  EXPECT_EQ(stats->at("slots_busy"), 0);
  for (const Json& w : stats->at("workers")) EXPECT_EQ(w.at("in_flight"), 0) << stats->dump();

  // The worker of this CPU takes it as soon as it registers.
  Child mine = start_host_worker(farm.port);
  std::optional<Json> result;
  for (int i = 0; i < 600 && !result; ++i) {
    if (auto m = client->receive(100ms); m && m->at("type") == "results") result = m->at("results").at(0);
  }
  ASSERT_TRUE(result.has_value()) << "no answer once the matching worker joined";
  const Measurement m = Measurement::from_json(rpc::decode_body(result->at("measurement"), "measurement"));
  EXPECT_TRUE(m.ok()) << m.message;
}

TEST(FarmHostTest, AWorkerRefusesATaskForAnotherFingerprint) {
  ScriptedFarm farm;
  Child worker = start_host_worker(farm.port());
  farm.accept();
  farm.send(
      Json{{"type", "hello"}, {"version", rpc::kProtocolVersion}, {"nonce", std::string(64, 'a')}, {"auth", false}});
  EXPECT_EQ(farm.receive("login").at("role"), "worker");
  farm.send(Json{{"type", "welcome"}, {"version", rpc::kProtocolVersion}, {"session", 1}, {"heartbeat_ms", 1000}});
  const Json reg = farm.receive("register");
  EXPECT_EQ(reg.at("targets"), Json::array({host::this_machine().target_name()}));
  const rpc::FarmRequest r = host_requests().front();
  const Json body =
      rpc::encode_body(Json{{"workload", r.workload}, {"schedule", r.schedule}, {"repeat", 1}, {"seed", 3}});
  farm.send(Json{{"type", "tasks"},
                 {"tasks", Json::array({Json{{"id", 9}, {"target", "host-000000000000"}, {"request", body}}})}});
  const Json result = farm.receive("results").at("results").at(0);
  EXPECT_EQ(result.at("id"), 9);
  const Measurement m = Measurement::from_json(rpc::decode_body(result.at("measurement"), "measurement"));
  EXPECT_EQ(m.status, Status::error);  // an infrastructure status: never stored as the schedule's
  EXPECT_THAT(m.message, HasSubstr("no target with key host-000000000000"));
  EXPECT_THAT(m.message, HasSubstr(host::this_machine().target_name()));
}

TEST(FarmHostTest, HostSlotsStopAtThePhysicalCores) {
  TempDir dir;
  Farm farm = start_farm(dir);
  Child worker =
      start_host_worker(farm.port, {"--slots", "4"}, env_with({{host::kTestMachineRootEnv, fake_machine(dir, 1)}}));
  wait_for_workers(farm.port, 1, 60s);
  EXPECT_EQ(farm_stats(farm.port).at("workers").at(0).at("slots"), 1);
}

}  // namespace
}  // namespace atvoss::farm_test

namespace atvoss::cli_test {
namespace {

using ::testing::HasSubstr;

class WorkerHostCli : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ::setenv("XDG_CACHE_HOME", ATVOSS_BIN_DIR "/../test-cache", 1);
  }
  // atvoss-worker with args, bounded: a worker that accepted its flags would retry the
  // unreachable farm forever, so it is stopped after 30 s (exit 124).
  CliResult run_worker(const std::string& args) const {
    const std::string out = file("stdout"), err = file("stderr");
    const int status = std::system(
        ("timeout 30 " + std::string(ATVOSS_BIN_DIR) + "/atvoss-worker " + args + " </dev/null >" + out + " 2>" + err)
            .c_str());
    return CliResult{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  }
};

TEST_F(WorkerHostCli, AnotherCpusHostTargetIsBadInput) {
  Json foreign = host::describe_machine().to_json();
  foreign["name"] = "host-000000000000";
  const CliResult r = run_worker("--farm 127.0.0.1:1 --target " + quote(foreign.dump()));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("'host-000000000000' is a host fingerprint of another CPU"));
}

TEST_F(WorkerHostCli, NoTargetWithoutTheHostBackendIsBadInput) {
  const CliResult r = run_worker("--farm 127.0.0.1:1 --backend npu-sim");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--target"));
}

}  // namespace
}  // namespace atvoss::cli_test
