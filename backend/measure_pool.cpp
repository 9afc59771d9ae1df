// MeasurePool. A Task lives in a shared_ptr so that a thread still running an attempt past
// its deadline can finish harmlessly: the watcher marks it abandoned, answers it, and the
// thread drops its late result and leaves the pool (a replacement was started for it).
#include "backend/measure_pool.hpp"

#include <algorithm>
#include <string>

#include "lowering/fusion_rule_scope.hpp"

namespace atvoss::backend {

using Clock = std::chrono::steady_clock;

struct MeasurePool::Task {
  Job job;
  Done done;
  lowering::FusionRuleSet fusion_rules;  // the submitter's scope; null: the registry's
  int attempts = 0;
  bool abandoned = false;              // its deadline passed: answered timeout, the result is ignored
  std::chrono::milliseconds limit{0};  // per attempt: the pool's timeout or the job's longer one
  Clock::time_point deadline;
};

MeasurePool::MeasurePool(MeasurePoolOptions options) : options_(options) {
  const std::lock_guard lock(mu_);
  for (int i = 0; i < std::max(1, options_.threads); ++i) start_thread();
  if (options_.timeout.count() > 0) watcher_ = std::thread([this] { watch_deadlines(); });
}

MeasurePool::~MeasurePool() {
  {
    const std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  work_ready_.notify_all();
  running_changed_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  std::vector<std::thread> threads;
  {
    const std::lock_guard lock(mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void MeasurePool::submit(Job job, Done done, std::chrono::milliseconds limit) {
  auto task = std::make_shared<Task>();
  task->job = std::move(job);
  task->done = std::move(done);
  task->limit = std::max(options_.timeout, limit);
  task->fusion_rules = lowering::scoped_fusion_rule_set();
  {
    const std::lock_guard lock(mu_);
    queue_.push_back(std::move(task));
  }
  work_ready_.notify_one();
}

std::vector<Measurement> MeasurePool::run(std::vector<Job> jobs, const OnDone& on_done,
                                          const std::vector<std::chrono::milliseconds>& limits) {
  struct Batch {
    std::mutex mu;
    std::condition_variable all_done;
    std::vector<Measurement> out;
    std::size_t left = 0;
  };
  auto batch = std::make_shared<Batch>();
  batch->out.resize(jobs.size());
  batch->left = jobs.size();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    // on_done outlives every call: run() returns only after the last done.
    submit(
        std::move(jobs[i]),
        [batch, i, &on_done](Measurement m) {
          const std::lock_guard lock(batch->mu);
          if (on_done) on_done(i, m);
          batch->out[i] = std::move(m);
          if (--batch->left == 0) batch->all_done.notify_all();
        },
        i < limits.size() ? limits[i] : std::chrono::milliseconds{0});
  }
  std::unique_lock lock(batch->mu);
  batch->all_done.wait(lock, [&] { return batch->left == 0; });
  return std::move(batch->out);
}

std::size_t MeasurePool::queued() const {
  const std::lock_guard lock(mu_);
  return queue_.size();
}

void MeasurePool::start_thread() {
  threads_.emplace_back([this] { thread_loop(); });
}

Measurement MeasurePool::attempt(const Task& task) const {
  const lowering::FusionRuleScope submitters_rules(task.fusion_rules);
  try {
    return task.job();
  } catch (const std::exception& e) {
    return Measurement::failed(Status::error, std::string("measurer: ") + e.what());
  } catch (...) {
    return Measurement::failed(Status::error, "measurer: unknown exception");
  }
}

void MeasurePool::thread_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    TaskPtr task = std::move(queue_.front());
    queue_.pop_front();
    ++task->attempts;
    if (options_.timeout.count() > 0) {
      task->deadline = Clock::now() + task->limit;
      running_.insert(task);
      running_changed_.notify_one();
    }
    lock.unlock();
    Measurement m = attempt(*task);
    lock.lock();
    running_.erase(task);
    if (task->abandoned) return;  // answered timeout; a replacement thread took this one's place
    if (is_infrastructure_error(m.status) && task->attempts <= options_.retries) {
      queue_.push_back(std::move(task));
      work_ready_.notify_one();
      continue;
    }
    Done done = std::move(task->done);
    lock.unlock();
    done(std::move(m));
    lock.lock();
  }
}

void MeasurePool::watch_deadlines() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (running_.empty()) {
      running_changed_.wait(lock);
      continue;
    }
    Clock::time_point next = Clock::time_point::max();
    for (const TaskPtr& t : running_) next = std::min(next, t->deadline);
    if (running_changed_.wait_until(lock, next) == std::cv_status::no_timeout) continue;
    const auto now = Clock::now();
    std::vector<TaskPtr> expired;
    for (const TaskPtr& t : running_) {
      if (t->deadline <= now) expired.push_back(t);
    }
    for (const TaskPtr& t : expired) {
      running_.erase(t);
      t->abandoned = true;
      start_thread();
    }
    for (const TaskPtr& t : expired) {
      Done done = std::move(t->done);
      lock.unlock();
      done(Measurement::failed(Status::timeout, "measurement exceeded " + std::to_string(t->limit.count()) + " ms"));
      lock.lock();
    }
  }
}

}  // namespace atvoss::backend
