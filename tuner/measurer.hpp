// Measurer: runs batches of candidate schedules and returns their measurements.
// LocalMeasurer (in-process simulator threads) is the embedded default;
// FarmMeasurer sends the batch to a tuning farm. Infrastructure errors
// (worker_lost, session_timeout, error) are retried by the implementation where
// it can and otherwise returned as such; the tuner never stores them as results.
#pragma once

#include <cstdint>
#include <vector>

#include "core/measurement.hpp"
#include "core/schedule.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"

namespace atvoss::tuner {

struct MeasureInput {
  Workload workload;
  Target target;
  Schedule schedule;
  int repeat = 3;
  std::uint64_t seed = 0;  // noise seed for this item; same seed -> same measurement
};

// Not required to be thread-safe: one tuner thread owns an instance.
class Measurer {
 public:
  virtual ~Measurer() = default;
  // One result per input, in input order. Blocks until every item is answered.
  virtual std::vector<Measurement> measure(const std::vector<MeasureInput>& batch) = 0;
  // Short name for logs and the database's worker column, e.g. "local:2".
  virtual std::string name() const = 0;
};

}  // namespace atvoss::tuner
