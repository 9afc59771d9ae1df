// LocalMeasurer. The Pool holds a queue of Jobs (one per item attempt) shared by
// the worker threads. A MeasureItem lives in a shared_ptr so a worker that outlives its
// item's deadline can still finish writing into it harmlessly; measure() only
// reads a MeasureItem's result once it is marked done, under the pool mutex.
#include "tuner/local_measurer.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>


namespace atvoss::tuner {

Measurement simulate_item(const MeasureInput& item, double noise) {
  return backend::measure_one(item, backend::MeasureOptions{noise});
}

struct LocalMeasurer::Pool {
  struct MeasureItem {
    const MeasureInput* input = nullptr;  // valid while measure() waits for it
    Measurement result;
    bool started = false;
    bool done = false;
    bool abandoned = false;  // deadline passed: the result is ignored
    std::chrono::steady_clock::time_point started_at;
  };

  MeasureFn fn;
  double noise = 0;
  std::mutex mu;
  std::condition_variable work_ready;
  std::condition_variable job_done;
  std::deque<std::shared_ptr<MeasureItem>> queue;
  std::vector<std::thread> threads;
  bool stopping = false;

  void start_thread() { threads.emplace_back([this] { worker(); }); }

  void worker() {
    std::unique_lock lock(mu);
    for (;;) {
      work_ready.wait(lock, [&] { return stopping || !queue.empty(); });
      if (stopping) return;
      auto job = queue.front();
      queue.pop_front();
      job->started = true;
      job->started_at = std::chrono::steady_clock::now();
      const MeasureInput input = *job->input;  // copy: measure() may return before we finish
      lock.unlock();
      Measurement m = run_one(input);
      lock.lock();
      // measure() replaced this thread when it abandoned the job: leave the pool.
      if (job->abandoned) return;
      job->result = std::move(m);
      job->done = true;
      job_done.notify_all();
    }
  }

  Measurement run_one(const MeasureInput& input) const {
    try {
      return fn(input, noise);
    } catch (const std::exception& e) {
      return Measurement::failed(Status::error, std::string("measurer: ") + e.what());
    } catch (...) {
      return Measurement::failed(Status::error, "measurer: unknown exception");
    }
  }
};

LocalMeasurer::LocalMeasurer(LocalMeasurerOptions options, MeasureFn fn)
    : options_(options), pool_(std::make_unique<Pool>()) {
  if (options_.threads <= 0) {
    options_.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }
  pool_->fn = std::move(fn);
  pool_->noise = options_.noise;
  for (int i = 0; i < options_.threads; ++i) pool_->start_thread();
}

LocalMeasurer::~LocalMeasurer() {
  {
    std::lock_guard lock(pool_->mu);
    pool_->stopping = true;
  }
  pool_->work_ready.notify_all();
  // A retired thread may still be inside a stuck measurement; joining waits for it,
  // which is the price of never leaving a thread touching freed memory.
  for (auto& t : pool_->threads) t.join();
}

std::string LocalMeasurer::name() const { return "local:" + std::to_string(options_.threads); }

std::vector<Measurement> LocalMeasurer::measure(const std::vector<MeasureInput>& batch) {
  using Clock = std::chrono::steady_clock;
  std::vector<Measurement> results(batch.size());
  std::vector<int> attempts(batch.size(), 0);
  std::vector<std::shared_ptr<Pool::MeasureItem>> jobs(batch.size());
  std::unique_lock lock(pool_->mu);
  auto submit = [&](std::size_t i) {
    jobs[i] = std::make_shared<Pool::MeasureItem>();
    jobs[i]->input = &batch[i];
    ++attempts[i];
    pool_->queue.push_back(jobs[i]);
    pool_->work_ready.notify_one();
  };
  for (std::size_t i = 0; i < batch.size(); ++i) submit(i);
  std::size_t open = batch.size();
  while (open > 0) {
    auto wake = Clock::now() + options_.timeout;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      auto& job = jobs[i];
      if (!job) continue;
      if (job->done) {
        if (is_infrastructure_error(job->result.status) && attempts[i] <= options_.retries) {
          submit(i);
          continue;
        }
        results[i] = std::move(job->result);
        job.reset();
        --open;
      } else if (job->started) {
        const auto deadline = job->started_at + options_.timeout;
        if (Clock::now() >= deadline) {
          job->abandoned = true;
          job->input = nullptr;
          results[i] = Measurement::failed(
              Status::timeout, "measurement exceeded " + std::to_string(options_.timeout.count()) +
                                   " ms");
          job.reset();
          --open;
          pool_->start_thread();  // the stuck thread leaves when it returns; this one replaces it
        } else {
          wake = std::min(wake, deadline);
        }
      }
    }
    if (open > 0) pool_->job_done.wait_until(lock, wake);
  }
  return results;
}

}  // namespace atvoss::tuner
