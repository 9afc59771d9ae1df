// Failures with real processes: a worker SIGKILLed or frozen mid-batch, the coordinator
// SIGKILLed and restarted mid-job, and a graceful SIGTERM with work still in flight.
#include <gtest/gtest.h>

#include "farm_harness.hpp"
#include "rpc/log.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::farm_test {
namespace {

class FarmFaults : public testing::Test {
 protected:
  void SetUp() override { rpc::set_log_enabled(false); }

  // Runs measure() on a thread so the test can break things while it is in flight.
  struct Job {
    std::vector<Measurement> results;
    rpc::FarmClientCounters counters;
    std::thread thread;
  };
  static void launch(Job& job, std::uint16_t port, std::vector<rpc::FarmRequest> reqs) {
    job.thread = std::thread([&job, port, reqs = std::move(reqs)] {
      rpc::FarmClientOptions o;
      o.farm = rpc::Endpoint{"127.0.0.1", port};
      o.reconnect_for = 30s;
      rpc::FarmClient client(o);
      job.results = client.measure(reqs);
      job.counters = client.counters();
    });
  }
  static void expect_all_answered(const Job& job, std::size_t n) {
    ASSERT_EQ(job.results.size(), n);
    for (const Measurement& m : job.results) {
      EXPECT_FALSE(is_infrastructure_error(m.status)) << to_string(m.status) << ": " << m.message;
    }
    EXPECT_EQ(job.counters.duplicate_answers, 0u);
  }
};

TEST_F(FarmFaults, WorkerKilledMidBatchItsTasksAreRetriedElsewhere) {
  TempDir dir;
  auto [farm, workers] = start_cluster(dir, 3, 2, {"--emulate-device-latency", "--compile-ms", "25"});
  const auto reqs = requests(90, 3);  // ~90 x 25 ms / 6 slots: about 0.4 s of work
  Job job;
  launch(job, farm.port, reqs);
  // Killed while it holds leases and more work waits, so its leases must move elsewhere.
  wait_for_stats(
      farm.port, [](const Json& s) { return in_flight_of(s, "w0") > 0 && s.at("queue_depth") > 0; },
      "w0 holding a lease with work queued");
  workers[0].signal(SIGKILL);
  job.thread.join();
  expect_all_answered(job, reqs.size());
  EXPECT_EQ(job.counters.answers, reqs.size());
  const Json stats = farm_stats(farm.port);
  EXPECT_GE(stats.at("retries").get<int>(), 1) << stats.dump();
  EXPECT_EQ(stats.at("workers_lost").get<int>(), 1);
  EXPECT_EQ(stats.at("workers").size(), 2u);
}

TEST_F(FarmFaults, FrozenWorkerMissesHeartbeatsAndIsReplaced) {
  TempDir dir;
  Farm farm = start_farm(dir, {"--heartbeat-ms", "100"});
  const std::vector<std::string> slow{"--emulate-device-latency", "--compile-ms", "40"};
  std::vector<std::string> frozen_flags = slow, healthy_flags = slow;
  frozen_flags.insert(frozen_flags.end(), {"--name", "frozen"});
  healthy_flags.insert(healthy_flags.end(), {"--name", "healthy"});
  Child frozen = start_worker(farm.port, 2, frozen_flags);
  Child healthy = start_worker(farm.port, 2, healthy_flags);
  wait_for_workers(farm.port, 2);
  const auto reqs = requests(40, 4);
  Job job;
  launch(job, farm.port, reqs);
  wait_for_stats(
      farm.port, [](const Json& s) { return in_flight_of(s, "frozen") > 0; }, "the worker to freeze holding a lease");
  frozen.signal(SIGSTOP);  // a partitioned node: connection open, nothing sent
  job.thread.join();
  frozen.signal(SIGCONT);
  expect_all_answered(job, reqs.size());
  const Json stats = farm_stats(farm.port);
  EXPECT_GE(stats.at("workers_lost").get<int>(), 1) << stats.dump();
}

TEST_F(FarmFaults, CoordinatorKilledAndRestartedJobCompletes) {
  TempDir dir;
  auto [farm, workers] = start_cluster(dir, 2, 2, {"--emulate-device-latency", "--compile-ms", "20"});
  const std::uint16_t port = farm.port;
  const auto reqs = requests(100, 5);  // ~0.5 s of work
  Job job;
  launch(job, port, reqs);
  // Killed with answers given and work left, so the client must resubmit the rest.
  wait_for_stats(
      port, [](const Json& s) { return s.at("answered") > 0 && s.at("tasks_pending") > 0; }, "a job half answered");
  farm.process.signal(SIGKILL);
  EXPECT_TRUE(farm.process.wait_for(5s).has_value());
  Farm second = start_farm(dir, {}, {}, port);  // same port: workers and client find it again
  job.thread.join();
  expect_all_answered(job, reqs.size());
  EXPECT_GE(job.counters.reconnects, 1u);
  EXPECT_GT(job.counters.resubmitted, 0u);
}

TEST_F(FarmFaults, SigtermAnswersUnfinishedWorkSessionTimeoutAndExitsCleanly) {
  TempDir dir;
  Farm farm = start_farm(dir, {"--grace-ms", "200"});
  Child worker = start_worker(farm.port, 1, {"--emulate-device-latency", "--compile-ms", "3000"});
  wait_for_workers(farm.port, 1);
  rpc::ChannelOptions o;
  auto client = rpc::Channel::open(rpc::Endpoint{"127.0.0.1", farm.port}, o);
  Json items = Json::array();
  std::uint64_t id = 1;
  for (const auto& r : requests(3, 6)) {
    items.push_back(
        Json{{"id", id++},
             {"target", r.target_key},
             {"request",
              rpc::encode_body(Json{{"workload", r.workload}, {"schedule", r.schedule}, {"repeat", 1}, {"seed", 6}})}});
  }
  client->send(Json{{"type", "submit"}, {"items", items}});
  wait_for_stats(
      farm.port, [](const Json& s) { return s.at("tasks_pending") == 3 && s.at("slots_busy") == 1; },
      "3 tasks pending, one leased");
  farm.process.signal(SIGTERM);
  std::size_t timed_out = 0;
  try {
    for (int i = 0; i < 100 && timed_out < 3; ++i) {
      const auto m = client->receive(100ms);
      if (!m || m->at("type") != "results") continue;
      for (const Json& r : m->at("results")) {
        EXPECT_EQ(r.at("status"), "session_timeout");
        ++timed_out;
      }
    }
  } catch (const Error&) {
    // the farm's closing "shutting_down" error after the answers
  }
  EXPECT_EQ(timed_out, 3u);
  const auto status = farm.process.wait_for(10s);
  ASSERT_TRUE(status.has_value()) << "atvoss-farm did not exit after SIGTERM";
  EXPECT_EQ(*status, 0);
}

}  // namespace
}  // namespace atvoss::farm_test
