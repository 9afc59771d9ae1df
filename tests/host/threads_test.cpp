// The threads knob: its values follow the machine (and the cap the benchmarks set), the
// runner pins a kernel to as many CPUs as it has threads, one per physical core first.
#include "host/pinning.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include <stdlib.h>

#include "core/error.hpp"
#include "host/builder.hpp"
#include "host/codegen.hpp"
#include "host/host_space.hpp"
#include "host/knob_values.hpp"
#include "host/process.hpp"
#include "host/runner.hpp"
#include "host_test_util.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

using testing::TempDir;
using testing::workload;

// cpu0..cpu3 where 0/1 and 2/3 are SMT siblings of cores 0 and 1.
TempDir fake_topology() {
  TempDir dir;
  for (int cpu = 0; cpu < 4; ++cpu) {
    const auto topo = dir.path() / ("cpu" + std::to_string(cpu)) / "topology";
    std::filesystem::create_directories(topo);
    std::ofstream(topo / "physical_package_id") << "0\n";
    std::ofstream(topo / "core_id") << cpu / 2 << "\n";
  }
  return dir;
}

TEST(PinningTest, OneCpuPerPhysicalCoreBeforeSiblings) {
  const TempDir sys = fake_topology();
  EXPECT_EQ(choose_cpus({0, 1, 2, 3}, 1, -1, sys.str()), (std::vector<int>{3}));
  EXPECT_EQ(choose_cpus({0, 1, 2, 3}, 2, -1, sys.str()), (std::vector<int>{3, 1}));
  EXPECT_EQ(choose_cpus({0, 1, 2, 3}, 2, 0, sys.str()), (std::vector<int>{0, 2}));
  EXPECT_EQ(choose_cpus({0, 1, 2, 3}, 3, 0, sys.str()), (std::vector<int>{0, 2, 1}));
  EXPECT_EQ(choose_cpus({0, 1, 2, 3}, 2, 1, sys.str()), (std::vector<int>{1, 2}));
  // Fewer allowed CPUs than threads: all of them.
  EXPECT_EQ(choose_cpus({2, 3}, 4, -1, sys.str()), (std::vector<int>{3, 2}));
  // No topology: every CPU counts as a core.
  EXPECT_EQ(choose_cpus({5, 6, 7}, 2, -1, (sys.path() / "none").string()), (std::vector<int>{7, 6}));
}

// The first name varies slowest, larger values first; a name the space lacks is skipped
// (depthwise convolutions have no tile_k), and a space nothing fits leaves s unchanged.
TEST(ShrinkUntilValidTest, LowersTheNamedKnobsUntilTheSpaceAccepts) {
  const ScheduleSpace space({{"a", {1, 2, 4, 8}}, {"b", {1, 2, 4, 8}}}, [](const Schedule& s) {
    return s.at("a") * s.at("b") <= 8 ? Verdict::valid() : Verdict::invalid("a*b");
  });
  Schedule s({{"a", 8}, {"b", 8}});
  ASSERT_TRUE(shrink_until_valid(space, s, {"missing", "a", "b"}));
  EXPECT_EQ(s, Schedule({{"a", 8}, {"b", 1}}));
  const ScheduleSpace none({{"a", {1, 2}}}, [](const Schedule&) { return Verdict::invalid("never"); });
  Schedule t({{"a", 2}});
  EXPECT_FALSE(shrink_until_valid(none, t, {"a"}));
  EXPECT_EQ(t, Schedule({{"a", 2}}));
}

TEST(ThreadValuesTest, PowersOfTwoUpToTheCoresAndTheCap) {
  MachineInfo m;
  m.physical_cores = 6;
  ::unsetenv("ATVOSS_HOST_MAX_THREADS");
  EXPECT_EQ(thread_values(m), (std::vector<std::int64_t>{1, 2, 4, 6}));
  m.physical_cores = 1;
  EXPECT_EQ(thread_values(m), (std::vector<std::int64_t>{1}));
  m.physical_cores = 8;
  ::setenv("ATVOSS_HOST_MAX_THREADS", "2", 1);
  EXPECT_EQ(thread_values(m), (std::vector<std::int64_t>{1, 2}));
  ::setenv("ATVOSS_HOST_MAX_THREADS", "two", 1);
  try {
    thread_values(m);
    ADD_FAILURE() << "a cap that is not a number was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    EXPECT_NE(std::string(e.what()).find("ATVOSS_HOST_MAX_THREADS"), std::string::npos) << e.what();
  }
  ::unsetenv("ATVOSS_HOST_MAX_THREADS");
}

TEST(ThreadValuesTest, TheDefaultScheduleRunsOnOneThread) {
  ::unsetenv("ATVOSS_HOST_MAX_THREADS");
  MachineInfo m = this_machine();
  m.physical_cores = 4;
  for (const char* text :
       {R"({"op":"matmul","dtype":"float32","dims":{"M":64,"N":64,"K":64}})",
        R"({"op":"softmax","dtype":"float32","dims":{"M":64,"N":64}})",
        R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":8,"H":8,"W":8,"K":8,"R":3,"S":3,"pad":1}})",
        R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":8,"H":8,"W":8,"R":3,"S":3,"pad":1}})"}) {
    const Workload w = workload(text);
    EXPECT_EQ(space_for(w, m).knobs().back().values, (std::vector<std::int64_t>{1, 2, 4})) << text;
    EXPECT_EQ(default_schedule(w, m).at("threads"), 1) << text;
  }
}

// The runner pins a kernel to as many CPUs as it says it has threads (kThreadsSymbol), and
// the kernel runs on that many threads.
void expect_the_runner_pins_as_many_cpus_as_threads(const Workload& w) {
  MachineInfo m = this_machine();
  m.physical_cores = std::max(2, m.physical_cores);  // generate a 2-thread kernel even on one core
  Schedule s = default_schedule(w, m);
  TempDir cache;
  BuildOptions build;
  build.cache_dir = cache.str();
  const std::size_t allowed = allowed_cpus().size();
  for (std::int64_t threads : {1, 2}) {
    s.set("threads", threads);
    const auto built = build_all({generate_source(w, s, m)}, build);
    ASSERT_EQ(built[0].status, Status::ok) << built[0].message;
    const ProcessResult p = run_process(
        {find_runner(), "--so", built[0].so_path, "--workload", w.to_json().dump(), "--min-repeat-us", "10"}, 60);
    ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
    const Json out = Json::parse(p.out);
    EXPECT_EQ(out.at("status"), "ok") << w.label() << ": " << p.out;
    EXPECT_EQ(out.at("threads"), threads) << w.label() << ": " << p.out;
    EXPECT_EQ(out.at("cpus").size(), std::min<std::size_t>(std::size_t(threads), allowed)) << p.out;
    // The kernel really started its team: the runner is single-threaded but for it.
    EXPECT_EQ(out.at("process_threads"), threads) << w.label() << ": " << p.out;
  }
}

TEST(ThreadsRunnerTest, TheRunnerPinsAsManyCpusAsTheKernelHasThreads) {
  expect_the_runner_pins_as_many_cpus_as_threads(
      workload(R"({"op":"matmul","dtype":"float32","dims":{"M":40,"N":24,"K":16}})"));
}

TEST(ThreadsRunnerTest, ConvKernelsRunOnAsManyThreads) {
  expect_the_runner_pins_as_many_cpus_as_threads(
      workload(R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":8,"H":8,"W":8,"K":8,"R":3,"S":3,"pad":1}})"));
  expect_the_runner_pins_as_many_cpus_as_threads(
      workload(R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":8,"H":8,"W":8,"R":3,"S":3,"pad":1}})"));
}

}  // namespace
}  // namespace atvoss::host
