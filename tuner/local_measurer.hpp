// LocalMeasurer: the embedded measurer — measures in-process on the backend that serves
// each item (backend/backend.hpp), on a MeasurePool (backend/measure_pool.hpp, the pool a
// farm worker's slots use too). Each item gets a deadline; an item still running at its
// deadline is answered `timeout` (a candidate error, stored as the schedule's result) and
// its thread is retired and replaced, so one stuck simulation never stalls the batch. An
// exception while measuring is an infrastructure error: the item is retried up to
// `retries` times and then returned as `error` (never stored). Candidate errors are
// returned as they are. An item whose cancel flag is raised before it starts is answered
// `error` at once (core/cancel.hpp).
// Threading: measure() is called by one tuner thread at a time; the pool is internal.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/measure_pool.hpp"
#include "tuner/measurer.hpp"

namespace atvoss::tuner {

struct LocalMeasurerOptions {
  // Worker threads. Default 0 = std::thread::hardware_concurrency() (at least 1).
  int threads = 0;
  // Per-item limit on one measurement (all its repeats). Default 10 s: a simulation
  // takes well under a millisecond, so only a runaway one gets near it. An item whose backend
  // enforces a longer limit of its own (BackendTraits::own_limit: the host) gets that.
  std::chrono::milliseconds timeout{10000};
  // Extra attempts after an infrastructure error. Default 2.
  int retries = 2;
  // Multiplicative noise sigma passed to a simulating backend. Default 0.02, as on real
  // hardware; 0 makes every measurement exact.
  double noise = 0.02;
};

// What measuring one item means. The default asks the item's backend; tests inject
// stalls and failures here.
using MeasureFn = std::function<Measurement(const MeasureRequest&, double noise)>;
Measurement simulate_item(const MeasureRequest& item, double noise);

class LocalMeasurer : public Measurer {
 public:
  explicit LocalMeasurer(LocalMeasurerOptions options = {}, MeasureFn fn = simulate_item);
  LocalMeasurer(const LocalMeasurer&) = delete;
  LocalMeasurer& operator=(const LocalMeasurer&) = delete;

  std::vector<Measurement> measure(const std::vector<MeasureRequest>& batch) override;
  std::vector<Measurement> measure_reporting(const std::vector<MeasureRequest>& batch,
                                             const OnResult& on_result) override;
  std::string name() const override;

 private:
  static std::chrono::milliseconds own_limit(const MeasureRequest& item);
  LocalMeasurerOptions options_;
  MeasureFn fn_;
  std::unique_ptr<backend::MeasurePool> pool_;
};

}  // namespace atvoss::tuner
