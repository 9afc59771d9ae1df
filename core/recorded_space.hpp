// RecordedSpace: a schedule space loaded from a table of recorded measurements
// (any knob names), so search strategies can be benchmarked on real hardware
// landscapes. Measuring a point returns the recorded time; an absent or failed
// configuration is invalid. Workloads {"op":"recorded","table":path} use it.
// Formats: CSV (knob columns, then time_us and status) or a Kernel Tuner cache
// file (.json or .json.gz; see shared/data/recorded-spaces/README.md).
// Immutable after load: safe from many threads.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/measurement.hpp"
#include "core/schedule_space.hpp"

namespace atvoss {

class RecordedSpace {
 public:
  // Loads (and caches by path) a table; bad_input naming the line/field on malformed input.
  static std::shared_ptr<const RecordedSpace> load(const std::string& path);

  const ScheduleSpace& space() const;
  // Recorded time in microseconds with its repeats; invalid if absent or failed.
  Measurement measure(const Schedule& schedule) const;
  // Best recorded time (microseconds), if any configuration succeeded.
  std::optional<double> optimum_us() const;

  virtual ~RecordedSpace() = default;

 protected:
  RecordedSpace() = default;
};

}  // namespace atvoss
