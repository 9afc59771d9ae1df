// Measurer: runs batches of candidate schedules and returns their measurements.
// LocalMeasurer (in-process threads running the backend) is the embedded default;
// FarmMeasurer sends the batch to a tuning farm. Infrastructure errors
// (worker_lost, session_timeout, error) are retried by the implementation where
// it can and otherwise returned as such; the tuner never stores them as results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "backend/backend.hpp"
#include "core/measurement.hpp"
#include "core/schedule.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"

namespace atvoss::tuner {

// One schedule to measure: the backend's request (workload, target, schedule, repeat, seed).
using backend::MeasureRequest;

// Not required to be thread-safe: one tuner thread owns an instance.
class Measurer {
 public:
  virtual ~Measurer() = default;
  // One result per input, in input order. Blocks until every item is answered.
  virtual std::vector<Measurement> measure(const std::vector<MeasureRequest>& batch) = 0;
  // measure(), also handing each result to on_result with its index, one call at a time.
  // This default hands them over when the whole batch is back; LocalMeasurer as each
  // item finishes (the tuner's per-trial progress).
  using OnResult = std::function<void(std::size_t index, const Measurement&)>;
  virtual std::vector<Measurement> measure_reporting(const std::vector<MeasureRequest>& batch,
                                                     const OnResult& on_result) {
    std::vector<Measurement> out = measure(batch);
    for (std::size_t i = 0; on_result && i < out.size(); ++i) on_result(i, out[i]);
    return out;
  }
  // Short name for logs and the database's worker column, e.g. "local:2".
  virtual std::string name() const = 0;
};

}  // namespace atvoss::tuner
