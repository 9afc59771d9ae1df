// CorePool: timed kernels get distinct cores, one per physical core, and wait when every
// core is leased; timing_cpus reads hyper-thread siblings as one core.
#include "host/core_pool.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "host_test_util.hpp"

namespace atvoss::host {
namespace {

TEST(CorePoolTest, LeasesDistinctCoresAndRefusesWhenAllAreTaken) {
  CorePool pool({5, 3});
  auto a = pool.try_acquire();
  auto b = pool.try_acquire();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->cpu(), 5);
  EXPECT_EQ(b->cpu(), 3);
  EXPECT_FALSE(pool.try_acquire().has_value());  // a third timed kernel must wait
  a.reset();
  auto c = pool.try_acquire();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->cpu(), 5);  // the freed core, and only it
}

// A kernel of two threads leases two cores: no other timed kernel may run on either, and
// it waits while only one is free.
TEST(CorePoolTest, AKernelOfSeveralThreadsLeasesAsManyCores) {
  CorePool pool({5, 3, 1});
  auto one = pool.try_acquire();
  ASSERT_TRUE(one.has_value());
  auto two = pool.try_acquire(2);
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->cpus(), (std::vector<int>{3, 1}));
  EXPECT_FALSE(pool.try_acquire().has_value());
  two.reset();
  EXPECT_FALSE(pool.try_acquire(3).has_value());  // one core is still leased
  auto again = pool.try_acquire(2);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->cpus().size(), 2u);
  again.reset();
  one.reset();
  auto capped = pool.try_acquire(8);  // more threads than cores: every core, no deadlock
  ASSERT_TRUE(capped.has_value());
  EXPECT_EQ(capped->cpus().size(), 3u);
}

TEST(CorePoolTest, AcquireWaitsForTheCoreThatIsGivenBack) {
  CorePool pool({7});
  std::optional<CorePool::Lease> held = pool.acquire();
  std::atomic<int> got{-1};
  std::thread waiter([&] { got = pool.acquire().cpu(); });
  // A waiter that returned while the core is held would be a second kernel on it. Only a
  // bounded look is possible: 50 ms of it still waiting.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(got.load(), -1);
  held.reset();
  waiter.join();
  EXPECT_EQ(got.load(), 7);
  EXPECT_TRUE(pool.try_acquire().has_value());  // the waiter's lease was given back too
}

int allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  return CPU_COUNT(&set);
}

// A fake sysfs topology in which every CPU of this process is a hyper-thread of core 0
// (one_core), or a core of its own.
void write_topology(const testing::TempDir& dir, bool one_core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    const auto d = dir.path() / ("cpu" + std::to_string(c)) / "topology";
    std::filesystem::create_directories(d);
    std::ofstream(d / "physical_package_id") << "0\n";
    std::ofstream(d / "core_id") << (one_core ? 0 : c) << "\n";
  }
}

TEST(CorePoolTest, TimingCpusTakeOneCpuPerPhysicalCore) {
  testing::TempDir one_core, own_cores;
  write_topology(one_core, true);
  write_topology(own_cores, false);
  MachineInfo m;
  m.physical_cores = 1024;
  EXPECT_EQ(timing_cpus(m, one_core.str()).size(), 1u);
  EXPECT_EQ(static_cast<int>(timing_cpus(m, own_cores.str()).size()), allowed_cpus());
  m.physical_cores = 1;  // never more than the machine's physical cores
  EXPECT_EQ(timing_cpus(m, own_cores.str()).size(), 1u);
}

}  // namespace
}  // namespace atvoss::host
