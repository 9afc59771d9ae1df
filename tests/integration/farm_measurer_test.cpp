// FarmMeasurer (the tuner's view of the farm) across a coordinator restart: a batch in
// flight when atvoss-farm is SIGKILLed completes once a new coordinator takes its port,
// with every result a candidate result (nothing lost, nothing answered as a failure).
#include <gtest/gtest.h>

#include "farm_harness.hpp"
#include "rpc/log.hpp"
#include "tuner/farm_measurer.hpp"

namespace atvoss::farm_test {
namespace {

TEST(FarmMeasurerIntegration, BatchSurvivesCoordinatorRestart) {
  rpc::set_log_enabled(false);
  TempDir dir;
  auto [farm, workers] = start_cluster(dir, 2, 2, {"--emulate-device-latency", "--compile-ms", "20"});
  const std::uint16_t port = farm.port;

  std::vector<tuner::MeasureRequest> batch;
  for (const rpc::FarmRequest& r : requests(80, 11)) {
    batch.push_back(tuner::MeasureRequest{Workload::from_json(r.workload), simulator::preset("ascend910"),
                                          Schedule::from_json(r.schedule), 2, 11});
  }
  tuner::FarmMeasurerOptions o;
  o.farm = rpc::Endpoint{"127.0.0.1", port};
  o.reconnect_for = std::chrono::milliseconds(30000);
  tuner::FarmMeasurer measurer(o);
  EXPECT_EQ(measurer.name(), "farm:127.0.0.1:" + std::to_string(port));
  std::vector<Measurement> results;
  std::thread job([&] { results = measurer.measure(batch); });
  // Killed with answers given and work left, so the measurer must resubmit the rest.
  wait_for_stats(
      port, [](const Json& s) { return s.at("answered") > 0 && s.at("tasks_pending") > 0; }, "a batch half answered");
  farm.process.signal(SIGKILL);
  EXPECT_TRUE(farm.process.wait_for(5s).has_value());
  Farm second = start_farm(dir, {}, {}, port);
  job.join();
  ASSERT_EQ(results.size(), batch.size());
  for (const Measurement& m : results) {
    EXPECT_FALSE(is_infrastructure_error(m.status)) << to_string(m.status) << ": " << m.message;
    if (m.ok()) EXPECT_EQ(m.repeats.size(), 2u);
  }
  EXPECT_GE(measurer.counters().reconnects, 1u);
  EXPECT_EQ(measurer.counters().duplicate_answers, 0u);
}

}  // namespace
}  // namespace atvoss::farm_test
