// One coordinator, three worker processes and two clients on loopback: every submitted
// item gets exactly one answer, and items shared by the clients are answered to both.
#include <set>

#include <gtest/gtest.h>

#include "farm_harness.hpp"
#include "rpc/log.hpp"

namespace atvoss::farm_test {
namespace {

TEST(FarmCluster, ThreeWorkersTwoClientsEveryItemAnsweredExactlyOnce) {
  rpc::set_log_enabled(false);
  TempDir dir;
  auto [farm, workers] = start_cluster(dir, 3, 2);

  // Client 2 repeats the first 40 requests of client 1, so some identical items are in
  // flight from both at once; each client must still get its own answer to each.
  const std::vector<rpc::FarmRequest> first = requests(150, 1);
  std::vector<rpc::FarmRequest> second = requests(110, 2);
  second.insert(second.end(), first.begin(), first.begin() + 40);
  ASSERT_GE(first.size(), 100u);

  std::vector<Measurement> got1, got2;
  rpc::FarmClientCounters c1, c2;
  const auto run = [&](const std::vector<rpc::FarmRequest>& reqs, std::vector<Measurement>& got,
                       rpc::FarmClientCounters& counters) {
    rpc::FarmClientOptions o;
    o.farm = rpc::Endpoint{"127.0.0.1", farm.port};
    o.reconnect_for = 20s;
    rpc::FarmClient client(o);
    got = client.measure(reqs);
    counters = client.counters();
  };
  std::thread t1(run, std::cref(first), std::ref(got1), std::ref(c1));
  std::thread t2(run, std::cref(second), std::ref(got2), std::ref(c2));
  t1.join();
  t2.join();

  ASSERT_EQ(got1.size(), first.size());
  ASSERT_EQ(got2.size(), second.size());
  for (const auto* got : {&got1, &got2}) {
    for (const Measurement& m : *got) {
      EXPECT_FALSE(is_infrastructure_error(m.status)) << to_string(m.status) << ": " << m.message;
    }
  }
  EXPECT_EQ(c1.answers, first.size());
  EXPECT_EQ(c2.answers, second.size());
  EXPECT_EQ(c1.duplicate_answers + c2.duplicate_answers, 0u);
  EXPECT_EQ(c1.reconnects + c2.reconnects, 0u);
  // The shared requests have the same seed, so the same answers, whoever measured them.
  for (std::size_t i = 0; i < 40; ++i) {
    EXPECT_EQ(got2[110 + i].status, got1[i].status);
    EXPECT_DOUBLE_EQ(got2[110 + i].time_us, got1[i].time_us);
  }
  const Json stats = farm_stats(farm.port);
  EXPECT_EQ(stats.at("answered").get<std::size_t>() + stats.at("deduplicated").get<std::size_t>(),
            first.size() + second.size())
      << stats.dump();
  EXPECT_EQ(stats.at("tasks_pending"), 0);
}

}  // namespace
}  // namespace atvoss::farm_test
