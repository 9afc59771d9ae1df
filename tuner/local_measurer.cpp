#include "tuner/local_measurer.hpp"

#include <algorithm>
#include <thread>

namespace atvoss::tuner {

Measurement simulate_item(const MeasureRequest& item, double noise) {
  return backend::measure_one(item, backend::MeasureOptions{noise});
}

LocalMeasurer::LocalMeasurer(LocalMeasurerOptions options, MeasureFn fn) : options_(options), fn_(std::move(fn)) {
  if (options_.threads <= 0) {
    options_.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }
  pool_ = std::make_unique<backend::MeasurePool>(
      backend::MeasurePoolOptions{options_.threads, options_.timeout, options_.retries});
}

// The item's backend's own limit (backend.hpp): a backend that stops its own runaways gets
// that long; one the registry does not know is measured (and refused) under the timeout.
std::chrono::milliseconds LocalMeasurer::own_limit(const MeasureRequest& item) {
  try {
    return backend::traits_for(item.workload, item.target).own_limit;
  } catch (const std::exception&) {
    return std::chrono::milliseconds{0};
  }
}

std::string LocalMeasurer::name() const { return "local:" + std::to_string(options_.threads); }

std::vector<Measurement> LocalMeasurer::measure(const std::vector<MeasureRequest>& batch) {
  return measure_reporting(batch, {});
}

std::vector<Measurement> LocalMeasurer::measure_reporting(const std::vector<MeasureRequest>& batch,
                                                          const OnResult& on_result) {
  std::vector<backend::MeasurePool::Job> jobs;
  std::vector<std::chrono::milliseconds> limits;
  jobs.reserve(batch.size());
  for (const MeasureRequest& item : batch) {
    limits.push_back(own_limit(item));
    // The job owns a copy: a timed-out attempt may still run after measure() returned.
    jobs.push_back([fn = fn_, item, noise = options_.noise] {
      if (cancelled(item.cancel)) return Measurement::failed(Status::error, kCancelledMessage);
      return fn(item, noise);
    });
  }
  return pool_->run(std::move(jobs), on_result, limits);
}

}  // namespace atvoss::tuner
