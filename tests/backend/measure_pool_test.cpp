// MeasurePool (backend/measure_pool.hpp) through its asynchronous side, as a farm worker's
// slots use it; the blocking side (run) is checked through LocalMeasurer in
// tests/tuner/local_measurer_test.cpp (order, timeout, retries, candidate errors).
#include "backend/measure_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>

#include "lowering/epilogue.hpp"
#include "lowering/fusion_rule_scope.hpp"

namespace atvoss::backend {
namespace {

using namespace std::chrono_literals;

Measurement ok_with_time(double t) {
  Measurement m;
  m.time_us = t;
  m.repeats = {t};
  return m;
}

// Answers handed to done callbacks, waited for by count (bounded).
struct Answers {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Measurement> got;
  MeasurePool::Done collect() {
    return [this](Measurement m) {
      const std::lock_guard lock(mu);
      got.push_back(std::move(m));
      cv.notify_all();
    };
  }
  bool wait_for(std::size_t n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 10s, [&] { return got.size() >= n; });
  }
};

TEST(MeasurePool, SubmitAnswersOnceWithTheLastAttempt) {
  Answers answers;
  std::atomic<int> calls{0};
  {
    MeasurePool pool({2, 0ms, 1});
    pool.submit(
        [&]() -> Measurement {
          if (calls++ == 0) return Measurement::failed(Status::worker_lost, "flaky");
          return ok_with_time(4);
        },
        answers.collect());
    ASSERT_TRUE(answers.wait_for(1));
  }
  EXPECT_EQ(calls.load(), 2);
  ASSERT_EQ(answers.got.size(), 1u);
  EXPECT_TRUE(answers.got[0].ok());
}

TEST(MeasurePool, TimedOutJobIsAnsweredOnceAndItsLateResultIsDropped) {
  Answers answers;
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  bool both_answered = false;
  {
    MeasurePool pool({1, 30ms, 2});
    pool.submit(
        [&] {
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return release; });
          return ok_with_time(1);
        },
        answers.collect());
    pool.submit([] { return ok_with_time(2); }, answers.collect());
    both_answered = answers.wait_for(2);
    {
      const std::lock_guard lock(mu);
      release = true;
    }
    cv.notify_all();
  }  // joins the retired thread after its late result
  ASSERT_TRUE(both_answered) << "the second job needs the replacement thread";
  ASSERT_EQ(answers.got.size(), 2u);
  std::vector<Status> statuses{answers.got[0].status, answers.got[1].status};
  std::sort(statuses.begin(), statuses.end());
  EXPECT_EQ(statuses, (std::vector<Status>{Status::ok, Status::timeout})) << "a timeout is not retried";
}

TEST(MeasurePool, RunsAsManyJobsAtOnceAsItHasThreads) {
  constexpr int kThreads = 3;
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  MeasurePool pool({kThreads, 0ms, 0});
  std::vector<MeasurePool::Job> jobs;
  for (int i = 0; i < kThreads; ++i) {
    jobs.push_back([&] {
      std::unique_lock lock(mu);
      ++started;
      cv.notify_all();
      // Only kThreads jobs running at once ever see all of them started.
      const bool all = cv.wait_for(lock, 10s, [&] { return started == kThreads; });
      return all ? ok_with_time(1) : Measurement::failed(Status::runtime_error, "ran alone");
    });
  }
  for (const Measurement& m : pool.run(std::move(jobs))) EXPECT_TRUE(m.ok()) << m.message;
}

// A tuning job's fusion rules are in force on its own thread only (FusionRuleScope); the
// pool's threads run each job under the rules of the thread that submitted it.
TEST(MeasurePool, RunsEachJobUnderTheFusionRulesOfItsSubmitter) {
  const std::vector<std::string> chain = {"bias", "batchnorm", "relu"};
  auto fused_by = [&] {  // a job telling which rule fused the chain, as its time
    return [&]() -> Measurement {
      return ok_with_time(double(lowering::split_epilogue("matmul", chain, 1).fused.size()));
    };
  };
  MeasurePool pool({1, 0ms, 0});  // one thread: the second job runs where the first ran
  std::vector<Measurement> in_job, after_job;
  {
    const lowering::FusionRuleScope job(
        lowering::fusion_rule_set_with({{"test-pool-rule", {"matmul", "bias", "batchnorm", "relu"}, 1, 0, 0}}));
    std::vector<MeasurePool::Job> jobs{fused_by()};
    in_job = pool.run(std::move(jobs));
  }
  std::vector<MeasurePool::Job> jobs{fused_by()};
  after_job = pool.run(std::move(jobs));
  EXPECT_EQ(in_job.at(0).time_us, 3) << "the job's rule fuses the whole chain";
  EXPECT_EQ(after_job.at(0).time_us, 1) << "the built-in elementwise rule fuses bias only";
}

}  // namespace
}  // namespace atvoss::backend
