// MeasurePool: the threads that run measurements, one pool type for every place that
// measures in parallel: the in-process measurer (tuner/local_measurer.hpp) and the slots
// of a farm worker (rpc/worker.hpp). A job is one measurement (a closure returning a
// Measurement); the pool gives it:
//   - a per-attempt deadline (timeout, or the job's own limit where it is longer): a job
//     still running at its deadline is answered `timeout` (a candidate error, stored as the
//     schedule's result) and its thread is retired and replaced, so one stuck measurement
//     never stalls the others;
//   - retries: a job that ends with an infrastructure error (or throws) is run again, up to
//     `retries` extra attempts, and then answered with that error (never stored).
// Timed host kernels lease their cores inside the job (host/core_pool.hpp), so jobs on
// several threads never share a core however many threads the pool has.
// A job runs under the fusion rules in force where it was submitted (a tuning job's own,
// lowering/fusion_rule_scope.hpp), not those of whichever job the pool thread ran before.
// Threading: submit() and run() are thread-safe; `done` runs on a pool thread (or on the
// deadline watcher for a timeout), without the pool's lock held.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/measurement.hpp"

namespace atvoss::backend {

struct MeasurePoolOptions {
  int threads = 1;                       // REQUIRES: >= 1
  std::chrono::milliseconds timeout{0};  // per attempt; 0: no limit
  int retries = 0;                       // extra attempts after an infrastructure error
};

class MeasurePool {
 public:
  using Job = std::function<Measurement()>;
  using Done = std::function<void(Measurement)>;

  explicit MeasurePool(MeasurePoolOptions options);
  // Drops queued jobs (their done is not called) and joins every thread; a retired thread
  // still inside a stuck measurement is waited for, the price of never leaving a thread
  // that touches freed memory.
  ~MeasurePool();
  MeasurePool(const MeasurePool&) = delete;
  MeasurePool& operator=(const MeasurePool&) = delete;

  // Queues job; done is called exactly once with its final measurement. limit: the job's
  // deadline per attempt where it is longer than the pool's timeout (a pool without one has
  // no deadlines at all).
  void submit(Job job, Done done, std::chrono::milliseconds limit = {});
  // Runs every job and returns their measurements in job order. Blocks until all are done.
  // on_done, if given, sees each final measurement with its job's index as it comes, one
  // call at a time (progress per trial). limits: each job's, as submit's (empty: none).
  using OnDone = std::function<void(std::size_t index, const Measurement&)>;
  std::vector<Measurement> run(std::vector<Job> jobs, const OnDone& on_done = {},
                               const std::vector<std::chrono::milliseconds>& limits = {});
  // Jobs waiting for a thread (not started).
  std::size_t queued() const;
  const MeasurePoolOptions& options() const { return options_; }

 private:
  struct Task;
  using TaskPtr = std::shared_ptr<Task>;
  void start_thread();  // REQUIRES: mu_
  void thread_loop();
  void watch_deadlines();
  Measurement attempt(const Task& task) const;

  const MeasurePoolOptions options_;
  mutable std::mutex mu_;
  std::condition_variable work_ready_, running_changed_;
  std::deque<TaskPtr> queue_;
  std::set<TaskPtr> running_;         // started attempts with a deadline (timeout > 0 only)
  std::vector<std::thread> threads_;  // retired ones too, joined at destruction
  std::thread watcher_;
  bool stopping_ = false;
};

}  // namespace atvoss::backend
