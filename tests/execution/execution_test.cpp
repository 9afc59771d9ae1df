// The execution simulator on tiny hand-made graphs with known answers: branches side by side,
// dependencies of a diamond, the critical-path priority against graph order, hidden launches,
// buffer reuse along a chain, the memory-plan checker, and the exec graph of a fused model graph.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <random>

#include "../core/hostile_json.hpp"
#include "core/error.hpp"
#include "execution/exec_graph.hpp"
#include "execution/memory_plan.hpp"
#include "execution/pipeline.hpp"
#include "execution/recompute.hpp"
#include "execution/scheduler.hpp"

namespace atvoss::execution {
namespace {

NodeCost cost(double us, int cores = 1, double launch = 0) { return {us, launch, cores, Unit::vector}; }

Device cores(int n) { return {n, n, false}; }

TEST(Execution, TwoBranchesOnEnoughCoresFinishInTheLongerBranchsTime) {
  ExecGraph g;
  const int x = g.add_buffer("x", 100);
  const int a1 = g.add_buffer("a1", 100), a2 = g.add_buffer("a2", 100);
  const int b1 = g.add_buffer("b1", 100);
  g.add_node("a", "op", cost(10, 4), {x}, {a1});
  g.add_node("a_next", "op", cost(10, 4), {a1}, {a2});
  g.add_node("b", "op", cost(15, 4), {x}, {b1});
  const Timeline t = simulate(g, cores(8));
  EXPECT_DOUBLE_EQ(t.makespan_us, 20);  // branch a: 10 + 10; b: 15 beside it
  EXPECT_DOUBLE_EQ(t.serial_us, 35);
  const Timeline narrow = simulate(g, cores(4));  // one branch at a time
  EXPECT_DOUBLE_EQ(narrow.makespan_us, 35);
  // No order beats these: the longer branch on 8 cores, all the work on 4 (35 x 4 / 4).
  EXPECT_DOUBLE_EQ(makespan_lower_bound(g, cores(8)), 20);
  EXPECT_DOUBLE_EQ(makespan_lower_bound(g, cores(4)), 35);
}

// A split chip (the AIV beside the AIC) runs a vector kernel on vector cores of its own beside a
// cube kernel; a coupled chip's vector work takes the cube cores' turn.
TEST(Execution, ASplitChipRunsVectorKernelsBesideCubeKernels) {
  ExecGraph g;
  const int x = g.add_buffer("x", 1), a = g.add_buffer("a", 1), b = g.add_buffer("b", 1);
  NodeCost matmul = cost(10, 4);
  matmul.unit = Unit::cube;
  g.add_node("matmul", "op", matmul, {x}, {a});
  g.add_node("softmax", "op", cost(10, 4), {x}, {b});
  Target t;
  t.ai_cores = 4;
  t.vector_cores = 8;
  t.organisation = "split";
  const Device split = Device::of(t);
  EXPECT_EQ(split.vector_cores, 8);
  EXPECT_DOUBLE_EQ(simulate(g, split).makespan_us, 10);
  t.organisation = "coupled";
  const Device coupled = Device::of(t);
  EXPECT_EQ(coupled.vector_cores, 4);
  EXPECT_DOUBLE_EQ(simulate(g, coupled).makespan_us, 20);
  EXPECT_DOUBLE_EQ(makespan_lower_bound(g, coupled), 20);
}

// The bound takes the largest of the chain (a launch before each start), each pool's work over
// its size, and the host issuing every launch.
TEST(Execution, TheMakespanLowerBoundIsTheLargestOfChainPoolsAndHost) {
  ExecGraph g;
  const int x = g.add_buffer("x", 1), a = g.add_buffer("a", 1), b = g.add_buffer("b", 1), c = g.add_buffer("c", 1);
  g.add_node("a", "op", cost(12, 2, 2), {x}, {a});  // 10 us on the device after a 2 us launch
  g.add_node("b", "op", cost(5, 2, 0), {a}, {b});
  NodeCost copy = cost(30, 1);
  copy.unit = Unit::copy;
  g.add_node("c", "copy", copy, {x}, {c});
  Device d = cores(4);
  EXPECT_DOUBLE_EQ(makespan_lower_bound(g, d), 30);  // the copy alone
  d.copy_engines = 2;
  EXPECT_DOUBLE_EQ(makespan_lower_bound(g, d), 30);  // still one copy of 30 us: the chain of one node
  d = cores(1);                                      // compute: (10 + 5) x 1 core; chain 2 + 10 + 5
  EXPECT_DOUBLE_EQ(makespan_lower_bound(g, d), 30);
  ExecGraph h;
  const int y = h.add_buffer("y", 1);
  for (int i = 0; i < 4; ++i)
    h.add_node("k" + std::to_string(i), "op", cost(10, 8, 1), {y}, {h.add_buffer("o" + std::to_string(i), 1)});
  EXPECT_DOUBLE_EQ(makespan_lower_bound(h, cores(8)), 36);   // 4 x 9 us of all 8 cores
  EXPECT_DOUBLE_EQ(makespan_lower_bound(h, cores(16)), 18);  // two at a time
  EXPECT_DOUBLE_EQ(makespan_lower_bound(h, cores(32)), 13);  // side by side: the fourth launch at 4, then 9 us
  EXPECT_DOUBLE_EQ(simulate(h, cores(32)).makespan_us, 13);
  for (const auto& graph : {g, h}) {
    EXPECT_GE(simulate(graph, cores(8)).makespan_us, makespan_lower_bound(graph, cores(8)));
  }
}

// Two branches of two kernels, 10 us on the device after a 1 us launch each. The host issues
// all four launches ahead (at 1..4 us): each branch runs back to back, 1 + 10 + 10 and
// 2 + 10 + 10. A sunk graph's device issues a kernel only once its predecessor is done, one
// at a time: a at 1, c at 2, then b at 12 and d at 13, which ends at 23.
TEST(Execution, ASunkGraphIssuesEachKernelOnceItsPredecessorsAreDone) {
  ExecGraph g;
  const int x = g.add_buffer("x", 1);
  int in[2] = {x, x};
  for (int step = 0; step < 2; ++step) {
    for (int branch = 0; branch < 2; ++branch) {
      const std::string name = std::string(1, char('a' + 2 * step + branch));
      const int out = g.add_buffer(name, 1);
      g.add_node(name, "op", cost(11, 1, 1), {in[branch]}, {out});
      in[branch] = out;
    }
  }
  Device host = cores(4), sunk = cores(4);
  sunk.sunk = true;
  EXPECT_DOUBLE_EQ(simulate(g, host).makespan_us, 22);
  const Timeline t = simulate(g, sunk);
  EXPECT_DOUBLE_EQ(t.makespan_us, 23);
  EXPECT_DOUBLE_EQ(t.runs[2].launched_us, 12);
  EXPECT_DOUBLE_EQ(t.runs[3].launched_us, 13);
  // The bound counts a launch on every kernel of the chain: 2 x (1 + 10).
  EXPECT_DOUBLE_EQ(makespan_lower_bound(g, host), 21);
  EXPECT_DOUBLE_EQ(makespan_lower_bound(g, sunk), 22);
  EXPECT_GE(t.makespan_us, makespan_lower_bound(g, sunk));
}

TEST(Execution, ADiamondRespectsItsDependencies) {
  ExecGraph g;
  const int x = g.add_buffer("x", 1), l = g.add_buffer("l", 1), r = g.add_buffer("r", 1),
            y = g.add_buffer("y", 1, true);
  const int top = g.add_buffer("top", 1);
  g.add_node("top", "op", cost(5), {x}, {top});
  g.add_node("left", "op", cost(7), {top}, {l});
  g.add_node("right", "op", cost(3), {top}, {r});
  g.add_node("join", "op", cost(2), {l, r}, {y});
  const Timeline t = simulate(g, cores(4));
  EXPECT_DOUBLE_EQ(t.runs[1].start_us, 5);
  EXPECT_DOUBLE_EQ(t.runs[2].start_us, 5);
  EXPECT_DOUBLE_EQ(t.runs[3].start_us, 12);  // after the slower side
  EXPECT_DOUBLE_EQ(t.makespan_us, 14);
  EXPECT_NE(t.runs[1].stream, t.runs[2].stream);  // side by side on two streams
  const std::vector<int> path = {0, 1, 3};
  EXPECT_EQ(t.critical_path, path);
}

TEST(Execution, TheCriticalPathGoesFirstWhereGraphOrderDoesNot) {
  // Two short independent ops listed first, then a chain of three; two cores, one each.
  ExecGraph g;
  const int x = g.add_buffer("x", 1);
  g.add_node("short1", "op", cost(10), {x}, {g.add_buffer("s1", 1)});
  g.add_node("short2", "op", cost(10), {x}, {g.add_buffer("s2", 1)});
  const int c1 = g.add_buffer("c1", 1), c2 = g.add_buffer("c2", 1);
  g.add_node("chain1", "op", cost(10), {x}, {c1});
  g.add_node("chain2", "op", cost(10), {c1}, {c2});
  g.add_node("chain3", "op", cost(10), {c2}, {g.add_buffer("c3", 1)});
  EXPECT_DOUBLE_EQ(simulate(g, cores(2), {Policy::topological}).makespan_us, 40);
  EXPECT_DOUBLE_EQ(simulate(g, cores(2), {Policy::critical_path}).makespan_us, 30);
}

TEST(Execution, AReadyOpUsesCoresThatAWaitingOpOfHigherPriorityCannotFill) {
  // Four cores: blocker (2 cores) starts first; big needs all four and waits for it; small
  // (2 cores, lowest priority) runs beside the blocker meanwhile.
  ExecGraph g;
  const int x = g.add_buffer("x", 1), b = g.add_buffer("b", 1);
  g.add_node("blocker", "op", cost(10, 2), {x}, {b});
  g.add_node("tail", "op", cost(8, 1), {b}, {g.add_buffer("t", 1)});
  g.add_node("big", "op", cost(10, 4), {x}, {g.add_buffer("g", 1)});
  g.add_node("small", "op", cost(5, 2), {x}, {g.add_buffer("s", 1)});
  const Timeline t = simulate(g, cores(4));
  EXPECT_DOUBLE_EQ(t.runs[0].start_us, 0);
  EXPECT_DOUBLE_EQ(t.runs[3].start_us, 0);
  EXPECT_DOUBLE_EQ(t.runs[2].start_us, 10);
  EXPECT_EQ(t.runs[3].cores, (std::vector<int>{2, 3}));
}

TEST(Execution, ACollectiveRunsOnTheCommunicationEngineBesideComputeAndCollectivesQueue) {
  ExecGraph g;
  const int x = g.add_buffer("x", 1), y = g.add_buffer("y", 1), g1 = g.add_buffer("g1", 1), g2 = g.add_buffer("g2", 1);
  const int r1 = g.add_buffer("r1", 1, true), r2 = g.add_buffer("r2", 1, true);
  g.add_node("grad1", "op", cost(5, 8), {x}, {g1});
  g.add_node("allreduce1", "AllReduce", {10, 0, 1, Unit::comm}, {g1}, {r1});
  g.add_node("grad2", "op", cost(5, 8), {x}, {g2});  // every core: runs while allreduce1 does
  g.add_node("allreduce2", "AllReduce", {10, 0, 1, Unit::comm}, {g2}, {r2});
  g.add_node("more", "op", cost(12, 8), {g2}, {y});
  const Timeline t = simulate(g, cores(8), {Policy::topological});
  EXPECT_DOUBLE_EQ(t.runs[1].start_us, 5);
  EXPECT_DOUBLE_EQ(t.runs[2].start_us, 5);   // compute is not held up by the collective
  EXPECT_DOUBLE_EQ(t.runs[3].start_us, 15);  // one communication engine: after allreduce1
  EXPECT_DOUBLE_EQ(t.runs[4].start_us, 10);
  EXPECT_DOUBLE_EQ(t.makespan_us, 25);
  EXPECT_DOUBLE_EQ(t.busy_comm_us, 20);
  EXPECT_DOUBLE_EQ(t.busy_core_us, 8 * 22.0);  // collectives hold no cores
  Device two = cores(8);
  two.comm_engines = 2;
  EXPECT_DOUBLE_EQ(simulate(g, two, {Policy::topological}).runs[3].start_us, 10);
}

TEST(Execution, NodesOnTwoDevicesHoldTheirOwnCoresAndLaunches) {
  ExecGraph g;
  const int x = g.add_buffer("x", 1), a = g.add_buffer("a", 1), b = g.add_buffer("b", 1, true);
  const int c = g.add_buffer("c", 1, true);
  NodeCost on1 = cost(10, 8, 4);
  on1.device = 1;
  g.add_node("a", "op", cost(10, 8, 4), {x}, {a});
  g.add_node("b", "op", cost(10, 8, 4), {a}, {b});
  g.add_node("c", "op", on1, {x}, {c});  // every core of device 1, beside a on device 0
  const Timeline t = simulate(g, cores(8));
  EXPECT_EQ(t.devices, 2);
  EXPECT_DOUBLE_EQ(t.runs[2].launched_us, 4);  // device 1's host: not after a's and b's launches
  EXPECT_DOUBLE_EQ(t.runs[2].start_us, 4);
  EXPECT_DOUBLE_EQ(t.makespan_us, 16);  // a 4..10, b 10..16 (6 us each without the launch)
  EXPECT_DOUBLE_EQ(t.utilisation(cores(8)), 8 * 18.0 / (2 * 8 * 16));
}

TEST(Execution, MemoryBoundKernelsSideBySideShareTheHbmBandwidth) {
  ExecGraph g;
  const int x = g.add_buffer("x", 1), a = g.add_buffer("a", 1, true), b = g.add_buffer("b", 1, true);
  const int c = g.add_buffer("c", 1, true);
  NodeCost stream = cost(10, 4);
  stream.hbm_bytes = 1000;  // 100 B/us alone: all of the device's bandwidth
  NodeCost compute = cost(10, 4);
  g.add_node("a", "op", stream, {x}, {a});
  g.add_node("b", "op", stream, {x}, {b});
  g.add_node("c", "op", compute, {x}, {c});
  Device d = cores(8);
  EXPECT_DOUBLE_EQ(simulate(g, d).makespan_us, 20);  // not shared: a and b side by side, c after
  d.hbm_bytes_per_us = 100;
  const Timeline t = simulate(g, d);
  // a and b each get half the bandwidth: both end at 20, as one after the other would; c,
  // which moves nothing, is not slowed (it starts at 20 when their cores free up).
  EXPECT_DOUBLE_EQ(t.runs[0].end_us, 20);
  EXPECT_DOUBLE_EQ(t.runs[1].end_us, 20);
  EXPECT_DOUBLE_EQ(t.runs[2].end_us, 30);
  EXPECT_DOUBLE_EQ(t.makespan_us, 30);
  // A compute kernel beside one memory-bound kernel: nobody slows.
  ExecGraph h;
  const int y = h.add_buffer("y", 1), p = h.add_buffer("p", 1, true), q = h.add_buffer("q", 1, true);
  h.add_node("p", "op", stream, {y}, {p});
  h.add_node("q", "op", compute, {y}, {q});
  EXPECT_DOUBLE_EQ(simulate(h, d).makespan_us, 10);
  // A kernel timed faster than its bytes over the bandwidth (its input warm in L2) is not
  // slowed alone: its standalone time is what it costs by itself, and a chain of such kernels
  // must never run slower scheduled than serial.
  ExecGraph alone;
  const int in = alone.add_buffer("in", 1), o1 = alone.add_buffer("o1", 1), o2 = alone.add_buffer("o2", 1, true);
  NodeCost warm = cost(10, 4);
  warm.hbm_bytes = 3000;  // 300 B/us at its time, on a 100 B/us HBM
  alone.add_node("k1", "op", warm, {in}, {o1});
  alone.add_node("k2", "op", warm, {o1}, {o2});
  EXPECT_DOUBLE_EQ(simulate(alone, d).makespan_us, 20);
}

// Two kernels whose re-reads each hit an L2 of 1000 B alone (reuse distance 600 B) need 1200 B
// side by side: each gets 500 B, where the linear fall-off (core/cache_reuse.hpp) hits
// 2 - 600/500 = 0.8 of its re-reads, so 2000 of its 10000 B of hits go to HBM: 6000 B in 10 us
// each, 1200 B/us together on a 1000 B/us HBM, so both run at 5/6 speed and end at 12 us.
TEST(Execution, KernelsSideBySideShareTheL2AndMissWhatTheirSharesDoNotHold) {
  const auto pair = [](double distance_a, double distance_b) {
    ExecGraph g;
    const int x = g.add_buffer("x", 1), a = g.add_buffer("a", 1, true), b = g.add_buffer("b", 1, true);
    NodeCost c = cost(10, 4);
    c.hbm_bytes = 4000;  // 400 B/us: room for both on the HBM while they keep their hits
    c.l2_hit_bytes = 10000;
    c.l2_distance_bytes = distance_a;
    g.add_node("a", "op", c, {x}, {a});
    c.l2_distance_bytes = distance_b;
    g.add_node("b", "op", c, {x}, {b});
    return g;
  };
  Device d = cores(8);
  d.hbm_bytes_per_us = 1000;
  EXPECT_DOUBLE_EQ(simulate(pair(600, 600), d).makespan_us, 10);  // L2 not modelled: each keeps its hits
  d.l2_bytes = 1000;
  const Timeline t = simulate(pair(600, 600), d);
  EXPECT_DOUBLE_EQ(t.runs[0].end_us, 12);
  EXPECT_DOUBLE_EQ(t.runs[1].end_us, 12);
  EXPECT_DOUBLE_EQ(simulate(pair(400, 600), d).makespan_us, 10);  // 1000 B together: both fit
}

TEST(Execution, LaunchesHideBehindRunningKernels) {
  ExecGraph g;
  int prev = g.add_buffer("x", 1);
  for (int i = 0; i < 3; ++i) {
    const int out = g.add_buffer("t" + std::to_string(i), 1);
    g.add_node("k" + std::to_string(i), "op", cost(10, 1, 5), {prev}, {out});
    prev = out;
  }
  const Timeline t = simulate(g, cores(1));
  EXPECT_DOUBLE_EQ(t.serial_us, 30);
  // Launches issued at 5, 10, 15; each kernel runs 5 us of device time once launched.
  EXPECT_DOUBLE_EQ(t.runs[0].start_us, 5);
  EXPECT_DOUBLE_EQ(t.makespan_us, 20);
}

TEST(Execution, AChainOfTensorsThatNeverLiveTogetherNeedsOnlyTheLargest) {
  ExecGraph g;
  const int a = g.add_buffer("a", 1000);
  const int b = g.add_buffer("b", 3000);
  const int c = g.add_buffer("c", 2000);
  const int d = g.add_buffer("d", 500);
  g.add_node("n1", "op", cost(1), {}, {a});
  g.add_node("n2", "op", cost(1), {a}, {b});
  g.add_node("n3", "op", cost(1), {b}, {c});
  g.add_node("n4", "op", cost(1), {c}, {d});
  // Each tensor lives from its producer's start to its consumer's end: a and c never overlap,
  // nor b and d; a pair that touches (b with a, b with c) is live together.
  const MemoryPlan plan = plan_memory(g, simulate(g, cores(1)), 1);
  EXPECT_EQ(plan.lower_bound_bytes, 5000);
  EXPECT_EQ(plan.peak_bytes, 5000);
  EXPECT_TRUE(check_plan(plan).empty());

  ExecGraph chain;  // tensors read at once by the next node only: a, then b, then c
  const int p = chain.add_buffer("p", 4000), q = chain.add_buffer("q", 4000), r = chain.add_buffer("r", 4000);
  chain.add_node("make_p", "op", cost(0), {}, {p});
  chain.add_node("p_to_q", "op", cost(1), {p}, {q});
  chain.add_node("q_to_r", "op", cost(1), {q}, {r});
  const MemoryPlan two = plan_memory(chain, simulate(chain, cores(1)), 1);
  EXPECT_EQ(two.peak_bytes, 8000);  // p and r share: p is dead when r is born
  EXPECT_TRUE(check_plan(two).empty());
}

// The buffers of two BERT-base attention layers as the simulator ran them (bench/graph/
// make_attention.py, vendor defaults on ascend910): the plan reaches the liveness bound.
TEST(Execution, TwoAttentionLayersArePlannedAtTheLivenessBound) {
  const Json j = load_json_file(std::string(ATVOSS_SOURCE_DIR) + "/tests/execution/data/attention2-lifetimes.json");
  const MemoryPlan lifetimes = MemoryPlan::from_json(j);
  ASSERT_EQ(lifetimes.allocations.size(), 31u);
  const MemoryPlan plan = plan_allocations(lifetimes.allocations);
  EXPECT_TRUE(check_plan(plan).empty());
  EXPECT_EQ(plan.peak_bytes, plan.lower_bound_bytes);
}

TEST(Execution, TheCheckerRejectsAnOverlappingPlan) {
  MemoryPlan plan;
  plan.allocations = {{"a", 0, 100, 0, 10}, {"b", 50, 100, 5, 15}, {"c", 0, 50, 10, 20}};
  const auto problems = check_plan(plan);
  ASSERT_EQ(problems.size(), 1u);  // a and b; c reuses a's bytes from when a ends, below b
  EXPECT_NE(problems[0].find("'a'"), std::string::npos);
  EXPECT_NE(problems[0].find("'b'"), std::string::npos);
  EXPECT_THROW(MemoryPlan::from_json(Json{{"allocations", {{{"tensor", "a"}, {"offset", "x"}}}}}), Error);
  const MemoryPlan back = MemoryPlan::from_json(plan.to_json());
  EXPECT_EQ(back.allocations.size(), 3u);
  EXPECT_EQ(check_plan(back).size(), 1u);
}

// Ends past int64 wrapped to negative numbers and the checker called such a plan sound; a
// buffer live over [5, 5) was said to overlap one live over [0, 20). Both were seen failing.
TEST(Execution, TheCheckerRefusesOverflowingPlansAndIgnoresEmptyLifetimes) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const auto plan_of = [](std::vector<Json> allocations) { return Json{{"allocations", allocations}}; };
  const auto a = [](std::int64_t offset, std::int64_t bytes, double start, double end) {
    return Json{{"tensor", "t"}, {"offset", offset}, {"bytes", bytes}, {"start_us", start}, {"end_us", end}};
  };
  const std::int64_t half = std::int64_t{1} << 62;
  for (const Json& bad :
       {plan_of({a(0, kMax, 0, 10), a(half, half, 0, 10)}), plan_of({a(kMax, 1, 0, 10)}),
        plan_of({a(0, half, 0, 10), a(half, half - 1, 0, 10), a(half - 1, 2, 20, 30)}), plan_of({a(-1, 8, 0, 10)})}) {
    try {
      MemoryPlan::from_json(bad);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_input);
      EXPECT_THAT(e.what(), ::testing::HasSubstr("allocations["));
    }
  }
  // The same built in memory: reported, not wrapped.
  MemoryPlan wrapped;
  wrapped.allocations = {{"a", 0, kMax, 0, 10}, {"b", half, half, 0, 10}};
  ASSERT_EQ(check_plan(wrapped).size(), 1u);
  EXPECT_THAT(check_plan(wrapped)[0], ::testing::HasSubstr("'b': offset + bytes overflows"));
  // Huge but representable buffers that do share bytes are still caught.
  MemoryPlan near_top;
  near_top.allocations = {{"a", 0, kMax, 0, 10}, {"b", kMax - 1, 1, 0, 10}};
  EXPECT_EQ(check_plan(near_top).size(), 1u);
  // An empty lifetime, and an empty buffer, overlap nothing.
  MemoryPlan empty;
  empty.allocations = {{"a", 0, 100, 0, 20}, {"b", 0, 100, 5, 5}, {"c", 10, 0, 0, 20}};
  EXPECT_TRUE(check_plan(empty).empty());
  EXPECT_TRUE(check_plan(MemoryPlan::from_json(empty.to_json())).empty());
}

// Seeded mutations of a memory plan file (offsets, sizes and times: zero, negative, near and
// at the int64 limits, huge doubles, the wrong type; allocations dropped or duplicated), as
// --check-plan reads one: each is refused as bad input or checked, never wrapped (the
// sanitizer builds run this too) and never a crash. Bounded by count and time.
TEST(Execution, MutatedPlanFilesAreRefusedOrCheckedNeverWrapped) {
  MemoryPlan seed_plan;
  seed_plan.allocations = {{"a", 0, 100, 0, 10}, {"b", 100, 50, 5, 15}, {"c", 0, 50, 10, 20}, {"d", 64, 64, 12, 30}};
  const Json seed = seed_plan.to_json();
  const std::vector<Json>& values = hostile_json_values();
  const std::vector<std::string> fields = {"offset", "bytes", "start_us", "end_us", "tensor"};
  std::mt19937_64 rng(20261205);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int checked = 0, refused = 0;
  for (int i = 0; i < 20000 && std::chrono::steady_clock::now() < deadline; ++i) {
    Json j = seed;
    Json& list = j["allocations"];
    for (int k = 0, edits = 1 + static_cast<int>(rng() % 3); k < edits; ++k) {
      const std::size_t at = rng() % list.size();
      switch (rng() % 6) {
        case 0:
          if (list.size() > 1) list.erase(at);
          break;
        case 1:
          list.push_back(list[at]);
          break;
        default:
          list[at][fields[rng() % fields.size()]] = values[rng() % values.size()];
      }
    }
    try {
      const MemoryPlan plan = MemoryPlan::from_json(j);
      ++checked;
      (void)check_plan(plan);
      EXPECT_GE(plan.peak_bytes, 0) << j.dump();
      EXPECT_GE(plan.lower_bound_bytes, 0) << j.dump();
    } catch (const Error& e) {
      ++refused;
      ASSERT_EQ(e.kind(), ErrorKind::bad_input) << j.dump() << ": " << e.what();
    }
  }
  EXPECT_GT(checked, 100);
  EXPECT_GT(refused, 100);
}

// A training step in miniature: three forward layers keep their activations for the three
// backward layers, so all three are live at the turn.
struct TrainingChain {
  ExecGraph g;
  int a1 = 0;
  TrainingChain() {
    const int x = g.add_buffer("x", 10);
    a1 = g.add_buffer("a1", 1000);
    const int a2 = g.add_buffer("a2", 1000), a3 = g.add_buffer("a3", 1000);
    const int g3 = g.add_buffer("g3", 10), g2 = g.add_buffer("g2", 10), gx = g.add_buffer("gx", 10, true);
    g.add_node("f1", "conv2d", cost(10), {x}, {a1});
    g.add_node("f2", "conv2d", cost(20), {a1}, {a2});
    g.add_node("f3", "conv2d", cost(30), {a2}, {a3});
    g.add_node("b3", "conv2d", cost(30), {a3, a2}, {g3});
    g.add_node("b2", "conv2d", cost(20), {g3, a1}, {g2});
    g.add_node("b1", "conv2d", cost(10), {g2, x}, {gx});
  }
};

TEST(Recompute, ADroppedActivationIsRecomputedWhenItsGradientArrivesAndThePlanFits) {
  const TrainingChain c;
  const Device d = cores(2);  // a free core: a recompute that did not wait would run at once
  const RecomputeResult kept = recompute_to_fit(c.g, d, {}, 1 << 20);
  EXPECT_TRUE(kept.fits);
  EXPECT_TRUE(kept.tensors.empty());
  ASSERT_GE(kept.plan.peak_bytes, 3000);                         // a1, a2, a3 live at the turn
  const RecomputeResult r = recompute_to_fit(c.g, d, {}, 2200);  // two activations (64-byte aligned) and change
  EXPECT_TRUE(r.fits) << r.plan.peak_bytes;
  EXPECT_EQ(r.tensors, (std::vector<std::string>{"a1"}));
  EXPECT_LE(r.plan.peak_bytes, 2200);
  EXPECT_GE(r.plan.peak_bytes, r.plan.lower_bound_bytes);
  EXPECT_TRUE(check_plan(r.plan).empty());
  EXPECT_DOUBLE_EQ(r.extra_us, 10);  // f1 once more, between b3 and b2
  // f1 runs again after b3 has made the gradient b2 needs, and before b2.
  int again = -1, b2 = -1, b3 = -1;
  for (int i = 0; i < int(r.graph.nodes().size()); ++i) {
    const std::string& n = r.graph.nodes()[i].name;
    if (n == "f1 (recompute)") again = i;
    if (n == "b2") b2 = i;
    if (n == "b3") b3 = i;
  }
  ASSERT_GE(again, 0);
  EXPECT_GE(r.timeline.runs[again].start_us, r.timeline.runs[b3].end_us);
  EXPECT_LE(r.timeline.runs[again].end_us, r.timeline.runs[b2].start_us);
}

// The chain above with a first layer of two ops (f1a -> t0 -> f1b) whose inner tensor t0 dies
// at once: a1 can be made again only by running both, from the kept input x.
struct TwoOpFirstLayer {
  ExecGraph g;
  TwoOpFirstLayer() {
    const int x = g.add_buffer("x", 10);
    const int t0 = g.add_buffer("t0", 500), a1 = g.add_buffer("a1", 1000);
    const int a2 = g.add_buffer("a2", 1000), a3 = g.add_buffer("a3", 1000);
    const int g3 = g.add_buffer("g3", 10), g2 = g.add_buffer("g2", 10), gx = g.add_buffer("gx", 10, true);
    g.add_node("f1a", "conv2d", cost(5), {x}, {t0});
    g.add_node("f1b", "relu", cost(10), {t0}, {a1});
    g.add_node("f2", "conv2d", cost(20), {a1}, {a2});
    g.add_node("f3", "conv2d", cost(30), {a2}, {a3});
    g.add_node("b3", "conv2d", cost(30), {a3, a2}, {g3});
    g.add_node("b2", "conv2d", cost(20), {g3, a1}, {g2});
    g.add_node("b1", "conv2d", cost(10), {g2, x}, {gx});
  }
  int node(const ExecGraph& h, const std::string& name) const {
    for (int i = 0; i < int(h.nodes().size()); ++i) {
      if (h.nodes()[i].name == name) return i;
    }
    return -1;
  }
};

TEST(Recompute, AnActivationWhoseInputDiesAtOnceIsRecomputedByItsChain) {
  const TwoOpFirstLayer c;
  const Device d = cores(2);
  RecomputeOptions one_op;
  one_op.max_chain = 1;  // t0 is dead by b2: a1 alone cannot be made again
  EXPECT_FALSE(recompute_to_fit(c.g, d, {}, 2200, one_op).fits);
  const RecomputeResult r = recompute_to_fit(c.g, d, {}, 2200);
  EXPECT_TRUE(r.fits) << r.plan.peak_bytes;
  EXPECT_EQ(r.tensors, (std::vector<std::string>{"a1"}));
  EXPECT_EQ(r.recomputed_nodes, 2);
  EXPECT_LE(r.plan.peak_bytes, 2200);
  EXPECT_GE(r.plan.peak_bytes, r.plan.lower_bound_bytes);
  EXPECT_TRUE(check_plan(r.plan).empty());
  EXPECT_DOUBLE_EQ(r.extra_us, 15);  // f1a and f1b once more, between b3 and b2
  const int a = c.node(r.graph, "f1a (recompute)"), b = c.node(r.graph, "f1b (recompute)");
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  const auto& runs = r.timeline.runs;
  EXPECT_GE(runs[a].start_us, runs[c.node(r.graph, "b3")].end_us);  // waits for the gradient
  EXPECT_GE(runs[b].start_us, runs[a].end_us);                      // reads f1a's copy of t0
  EXPECT_LE(runs[b].end_us, runs[c.node(r.graph, "b2")].start_us);
  // b2 reads the copy; the original a1 dies after f2.
  const ExecNode& b2 = r.graph.nodes()[c.node(r.graph, "b2")];
  EXPECT_EQ(r.graph.buffers()[b2.reads[1]].name, "a1 (recomputed)");
}

// a1's consumer z needs both cores, so it waits for the chain c1 -> c2 -> c3 although a1 is
// ready at 10 us; a recompute of a1 that ran as soon as its inputs were there would take the
// free core at once and keep a copy live across c2, the peak it was dropped for.
TEST(Recompute, TheRecomputeRunsWhenItsConsumerIsDueNotWhenACoreIsFree) {
  ExecGraph g;
  const int x = g.add_buffer("x", 10), a1 = g.add_buffer("a1", 1000);
  const int m1 = g.add_buffer("m1", 2000), m2 = g.add_buffer("m2", 2000), m3 = g.add_buffer("m3", 10, true);
  const int out = g.add_buffer("out", 10, true);
  g.add_node("f1", "conv2d", cost(10), {x}, {a1});
  g.add_node("c1", "conv2d", cost(30), {x}, {m1});
  g.add_node("c2", "conv2d", cost(30), {m1}, {m2});
  g.add_node("c3", "conv2d", cost(30), {m2}, {m3});
  g.add_node("z", "conv2d", cost(10, 2), {a1, x}, {out});
  const RecomputeResult r = recompute_to_fit(g, cores(2), {}, 4500);  // x, m1, m2 and a1 are 5184 B at c2
  EXPECT_TRUE(r.fits) << r.plan.peak_bytes;
  EXPECT_EQ(r.tensors, (std::vector<std::string>{"a1"}));
  EXPECT_DOUBLE_EQ(r.extra_us, 10);  // f1 again after c3, then z
  EXPECT_TRUE(check_plan(r.plan).empty());
}

TEST(Recompute, ABudgetNoRecomputeReachesIsReportedAsNotFitting) {
  const TrainingChain c;
  const RecomputeResult r = recompute_to_fit(c.g, cores(1), {}, 500);  // less than one activation
  EXPECT_FALSE(r.fits);
  EXPECT_GT(r.plan.peak_bytes, 500);
  EXPECT_TRUE(check_plan(r.plan).empty());
}

TEST(Execution, AFusedGraphRunsOneKernelPerChainAndViewsMoveNothing) {
  frontend::Graph g;
  g.add_tensor("x", {1, 8}, 16);
  g.add_tensor("w", {8, 8}, 128, true);
  auto node = [&](const std::string& name, const std::string& op, std::vector<std::string> in,
                  std::vector<std::string> out) -> frontend::GraphNode& {
    return g.node(g.add_node(name, op, in, out));
  };
  for (const char* t : {"c", "r", "v", "c2", "sum"}) g.add_tensor(t, {1, 8}, 16);
  node("conv", "Conv", {"x", "w"}, {"c"}).kernel = Workload{};
  node("relu", "Relu", {"c"}, {"r"}).fused_into = 0;
  node("flat", "Reshape", {"r"}, {"v"}).view = true;
  node("conv2", "Conv", {"v", "w"}, {"c2"}).kernel = Workload{};
  node("add", "Add", {"c2", "x"}, {"sum"}).fused_into = 3;  // a residual from the model's input
  g.mark_output("sum");
  const ExecGraph e = ExecGraph::from_graph(g, [](int) { return cost(1); });
  ASSERT_EQ(e.nodes().size(), 2u);
  std::vector<std::string> buffers;
  for (const auto& b : e.buffers()) buffers.push_back(b.name);
  EXPECT_EQ(buffers, (std::vector<std::string>{"x", "r", "sum"}));  // c and c2 stay inside their kernels
  EXPECT_EQ(e.nodes()[1].preds, std::vector<int>{0});               // conv2 reads r through the view
  EXPECT_EQ(e.nodes()[1].reads.size(), 2u);                         // r and the residual x
  EXPECT_TRUE(e.buffers()[2].output);
}

}  // namespace
}  // namespace atvoss::execution

namespace atvoss::execution {
namespace {

int node_named(const ExecGraph& g, const std::string& name) {
  for (std::size_t i = 0; i < g.nodes().size(); ++i) {
    if (g.nodes()[i].name == name) return int(i);
  }
  return -1;
}

ExecGraph two_stage_chain(double a_us, double b_us) {
  ExecGraph g;
  const int x = g.add_buffer("x", 1024), h = g.add_buffer("h", 1024), y = g.add_buffer("y", 1024, true);
  g.add_node("A", "op", {a_us, 0, 8, Unit::vector}, {x}, {h});
  g.add_node("B", "op", {b_us, 0, 8, Unit::vector}, {h}, {y});
  return g;
}

TEST(Pipeline, StagesOfConsecutiveMicroBatchesOverlap) {
  const ExecGraph g = two_stage_chain(10, 10);
  EXPECT_EQ(split_stages(g, 2), (std::vector<int>{0, 1}));
  const Device d{16, 16, false};
  EXPECT_DOUBLE_EQ(simulate(g, d).makespan_us, 20);
  // Four micro-batches of 2.5 us per stage: (4 + 2 - 1) x 2.5.
  const ExecGraph p = pipelined(g, 2, 4);
  EXPECT_DOUBLE_EQ(simulate(p, d).makespan_us, 12.5);
  EXPECT_GE(node_named(p, "B#3"), 0);
  // One micro-batch is the graph itself.
  EXPECT_DOUBLE_EQ(simulate(pipelined(g, 2, 1), d).makespan_us, 20);
}

TEST(Pipeline, MicroBatchKernelsCostWhatTheCallerSimulated) {
  ExecGraph g;
  const int x = g.add_buffer("x", 800), h = g.add_buffer("h", 800), y = g.add_buffer("y", 800, true);
  g.add_node("A", "op", cost(80, 8, 2), {x}, {h});
  g.add_node("B", "op", cost(40, 8, 2), {h}, {y});
  const ExecGraph scaled = pipelined(g, 1, 4);
  EXPECT_DOUBLE_EQ(scaled.nodes()[0].cost.time_us, 2 + 78 / 4.0);  // 1/4 of the device time
  // A's smaller kernel leaves cores idle: 30 us, not 19.5; B has no answer and is scaled.
  const MicroBatchCost sim = [](int node, int m) -> std::optional<NodeCost> {
    if (node == 0 && m == 4) return NodeCost{32, 2, 2, Unit::vector};
    return std::nullopt;
  };
  const ExecGraph resim = pipelined(g, 1, 4, sim);
  for (const auto& n : resim.nodes()) {
    if (n.name.rfind("A#", 0) == 0) EXPECT_DOUBLE_EQ(n.cost.time_us, 32);
    if (n.name.rfind("B#", 0) == 0) EXPECT_DOUBLE_EQ(n.cost.time_us, 2 + 38 / 4.0);
  }
  EXPECT_GT(simulate(resim, cores(8)).makespan_us, simulate(scaled, cores(8)).makespan_us);
}

TEST(Pipeline, DoubleBufferingHoldsAFastStageTwoMicroBatchesAhead) {
  const ExecGraph p = pipelined(two_stage_chain(4, 40), 2, 4);  // A: 1 us, B: 10 us per micro-batch
  const Timeline t = simulate(p, Device{16, 16, false});
  EXPECT_DOUBLE_EQ(t.runs[node_named(p, "A#1")].start_us, 1);
  // A#2 needs B#0 to have read its buffer: 1 + 10.
  EXPECT_DOUBLE_EQ(t.runs[node_named(p, "A#2")].start_us, 11);
  // The boundary tensor h of each micro-batch is a buffer of a quarter of the batch's.
  const MemoryPlan plan = plan_memory(p, t, 1);
  EXPECT_TRUE(check_plan(plan).empty());
  EXPECT_THROW(pipelined(p, 0, 1), Error);
}

}  // namespace
}  // namespace atvoss::execution
