#include "tuner/task_scheduler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/error.hpp"

namespace atvoss::tuner {
namespace {

std::vector<SchedulerTask> three_tasks() { return {{1, 1e9, "conv2d"}, {10, 1e9, "conv2d"}, {1, 1e8, "matmul"}}; }

// Drives a scheduler against fixed per-task curves: task i's best after t trials.
std::map<int, int> simulate(TaskScheduler& s, int rounds, int per_round, const std::vector<double>& start,
                            const std::vector<double>& floor) {
  std::map<int, int> picks;
  for (int r = 0; r < rounds; ++r) {
    auto i = s.next_task();
    if (!i) break;
    ++picks[*i];
    const int t = s.trials(*i) + per_round;
    const double best = floor[*i] + (start[*i] - floor[*i]) / (1 + 0.1 * t);
    s.record_round(*i, per_round, best);
  }
  return picks;
}

TEST(TaskScheduler, WarmUpVisitsEveryTaskOnceInOrder) {
  TaskScheduler s(three_tasks(), {});
  for (int i = 0; i < 3; ++i) {
    auto next = s.next_task();
    ASSERT_TRUE(next.has_value());
    EXPECT_EQ(*next, i);
    s.record_round(i, 8, 100.0);
  }
}

TEST(TaskScheduler, WarmUpGoesHeaviestEstimatedShareFirst) {
  // weight x estimate: 2 x 10 = 20, 1 x 50 = 50, 5 x 1 = 5, 1 x 0 (unknown) last.
  TaskScheduler s({{2, 1, "a", 10}, {1, 1, "b", 50}, {5, 1, "c", 1}, {1, 1, "d", 0}}, {});
  for (int want : {1, 0, 2, 3}) {
    auto next = s.next_task();
    ASSERT_TRUE(next.has_value());
    EXPECT_EQ(*next, want);
    EXPECT_EQ(s.round_size(*next), 16);  // no budget given: full first rounds, every task
    s.record_round(*next, 16, 100.0);
  }
}

// 316 tasks as in DenseNet-121: 20 carry 99% of the time, 296 share the last 1%.
std::vector<SchedulerTask> densenet_like() {
  std::vector<SchedulerTask> tasks;
  for (int i = 0; i < 316; ++i) {
    tasks.push_back({1, 1e6, "t" + std::to_string(i % 7), i % 16 == 3 ? 500.0 : 0.34});
  }
  return tasks;
}

TEST(TaskScheduler, ABudgetWarmsUpOnlyTheTasksThatCarryTheTime) {
  SchedulerOptions o;
  o.budget = 400;
  TaskScheduler s(densenet_like(), o);
  EXPECT_EQ(s.warmup_count(), 20);  // 99% of the estimated time
  int warm_trials = 0;
  for (int k = 0; k < 20; ++k) {
    const int i = *s.next_task();
    EXPECT_EQ(i % 16, 3) << "a light task warmed up before a heavy one";
    EXPECT_EQ(s.round_size(i), 10);  // half the budget over 20 first rounds
    warm_trials += s.round_size(i);
    s.record_round(i, s.round_size(i), 400.0);
    EXPECT_EQ(s.round_size(i), 16);  // later rounds take the batch
  }
  EXPECT_EQ(warm_trials, 200);
  // Without estimates the warm-up stops at budget * share / min_first_round tasks.
  std::vector<SchedulerTask> blind = densenet_like();
  for (auto& t : blind) t.estimate_us = 0;
  TaskScheduler b(blind, o);
  EXPECT_EQ(b.warmup_count(), 50);
  EXPECT_EQ(b.round_size(b.warmup_order().front()), 4);
}

TEST(TaskScheduler, AnUnmeasuredTaskCompetesWithItsEstimate) {
  // Task 1 is not warmed up (the budget covers one task). Task 0 measures 100 us. Task 1
  // gets the next round when its estimated share (300) beats that, not when it is 50:
  // it is not treated as unknown, which would always win.
  SchedulerOptions o;
  o.budget = 8;
  for (const auto& [estimate, next] : {std::pair{300.0, 1}, std::pair{50.0, 0}}) {
    TaskScheduler s({{1, 1e6, "a", 400}, {1, 1e6, "b", estimate}}, o);
    ASSERT_EQ(s.warmup_count(), 1);
    ASSERT_EQ(*s.next_task(), 0);
    s.record_round(0, 4, 100.0);
    EXPECT_EQ(*s.next_task(), next) << "estimate " << estimate;
  }
}

TEST(TaskScheduler, BadWarmUpOptionsAreBadInput) {
  SchedulerOptions o;
  o.warmup_share = 0;
  EXPECT_THROW(TaskScheduler(three_tasks(), o), Error);
  o = {};
  o.budget = -1;
  EXPECT_THROW(TaskScheduler(three_tasks(), o), Error);
}

TEST(TaskScheduler, GradientFavoursHeavilyWeightedTask) {
  TaskScheduler s(three_tasks(), {});
  auto picks = simulate(s, 60, 8, {100, 100, 100}, {10, 10, 10});
  EXPECT_GT(picks[1], picks[0]);
  EXPECT_GT(picks[1], picks[2]);
}

// Task 0 has converged at 100 us; task 1 (same weight and start) still gains 3% a round.
// Plain Ansor keeps feeding the converged task through its optimistic forward term; the
// plateau damping sends the rounds to the task that still improves.
std::map<int, int> converged_vs_improving(const SchedulerOptions& o) {
  TaskScheduler s({{1, 1e9, "a"}, {1, 1e9, "b"}}, o);
  std::map<int, int> picks;
  for (int r = 0; r < 40; ++r) {
    const int i = *s.next_task();
    ++picks[i];
    const double best = i == 0 ? 100.0 : 100.0 * std::pow(0.97, s.trials(1) / 8 + 1);
    s.record_round(i, 8, best);
  }
  return picks;
}

TEST(TaskScheduler, PlateauDampingSendsRoundsToTheTaskStillImproving) {
  auto damped = converged_vs_improving({});
  EXPECT_GT(2 * damped[1], 3 * damped[0]) << damped[0] << " " << damped[1];  // 27 vs 13
  SchedulerOptions plain;
  plain.plateau_rounds = 0;
  auto ansor = converged_vs_improving(plain);
  EXPECT_LT(ansor[1], ansor[0]) << ansor[0] << " " << ansor[1];  // 16 vs 24
}

TEST(TaskScheduler, RoundRobinSpreadsEvenly) {
  SchedulerOptions o;
  o.policy = "round_robin";
  TaskScheduler s(three_tasks(), o);
  auto picks = simulate(s, 30, 8, {100, 100, 100}, {10, 10, 10});
  EXPECT_EQ(picks[0], 10);
  EXPECT_EQ(picks[1], 10);
  EXPECT_EQ(picks[2], 10);
}

TEST(TaskScheduler, EarlyStoppingFinishesAStalledTask) {
  SchedulerOptions o;
  o.early_stopping = 16;
  TaskScheduler s({{1, 1e9, "a"}}, o);
  s.record_round(0, 8, 100);
  s.record_round(0, 8, 99.99);  // < 0.1% better: not progress
  EXPECT_FALSE(s.finished(0));
  s.record_round(0, 8, 99.98);
  EXPECT_TRUE(s.finished(0));
  EXPECT_FALSE(s.next_task().has_value());
}

TEST(TaskScheduler, TaskWithoutValidTimeKeepsInfiniteObjective) {
  TaskScheduler s(three_tasks(), {});
  s.record_round(0, 8, std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isinf(s.objective()));
}

TEST(TaskScheduler, RestoredStateContinuesTheSamePlan) {
  SchedulerOptions o;
  o.seed = 42;
  TaskScheduler a(three_tasks(), o);
  simulate(a, 12, 8, {100, 80, 60}, {10, 20, 30});
  TaskScheduler b(three_tasks(), o);
  b.restore(parse_json(a.to_json().dump(), "state"));
  for (int r = 0; r < 20; ++r) {
    auto x = a.next_task(), y = b.next_task();
    ASSERT_EQ(x, y) << "round " << r;
    if (!x) break;
    a.record_round(*x, 8, a.best(*x) * 0.97);
    b.record_round(*y, 8, b.best(*y) * 0.97);
  }
  EXPECT_EQ(a.total_trials(), b.total_trials());
}

TEST(TaskScheduler, RejectsStateOfAnotherTaskList) {
  TaskScheduler a(three_tasks(), {});
  TaskScheduler b({{1, 1, "x"}}, {});
  EXPECT_THROW(b.restore(a.to_json()), Error);
  EXPECT_THROW(b.restore(Json{{"tasks", 3}}), Error);
}

TEST(TaskScheduler, RejectsUnknownPolicyAndBadWeight) {
  SchedulerOptions o;
  o.policy = "fastest";
  EXPECT_THROW(TaskScheduler(three_tasks(), o), Error);
  EXPECT_THROW(TaskScheduler({{0, 1, "x"}}, {}), Error);
}

}  // namespace
}  // namespace atvoss::tuner
