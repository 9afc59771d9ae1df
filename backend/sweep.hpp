// Sweep: measuring every valid point of a space, or a seeded sample of them, and
// writing the results as the CSV table that core/recorded_space.hpp reads back
// (one column per knob, then time_us and status). atvoss-sim sweep is a thin shell
// around it; ground-truth tables and recorded spaces come from here.
// Not thread-safe: one caller per sweep.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <vector>

#include "backend/backend.hpp"

namespace atvoss::backend {

struct SweepOptions {
  // Valid points to measure; 0 = all of them, in flat-index order. With a limit the
  // points are a seeded random sample. A space of more than 200 million points needs a limit.
  std::uint64_t limit = 0;
  std::uint64_t seed = 0;  // sample order and measurement noise
  int repeat = 1;
  MeasureOptions measure;
};

struct SweepProgress {
  std::uint64_t measured = 0;  // valid points measured so far
  std::uint64_t wanted = 0;    // points the sweep will measure at most
  double best_us = 0;          // 0 until an ok measurement
};

struct SweepResult {
  std::uint64_t measured = 0;
  double best_us = 0;  // 0 if no point measured ok
  Schedule best_schedule;
};

// Flat indices to visit: all of them in order, or a seeded random order to sample from
// (a shuffle when the space is small enough, distinct random draws otherwise).
// bad_input if the space is too large to enumerate and no limit is given.
std::vector<std::uint64_t> sweep_order(const ScheduleSpace& space, std::uint64_t limit, std::uint64_t seed);

// The CSV writer: a header of the space's knobs plus time_us,status, then one row per call.
class SweepCsv {
 public:
  SweepCsv(std::ostream& out, const ScheduleSpace& space);
  void row(const Schedule& s, const Measurement& m);

 private:
  std::ostream& out_;
  std::vector<std::string> knobs_;
};

// Measures w on t over the sweep order and writes each row to csv. progress (may be
// empty) is called every max(1000, wanted / 20) points. io error if the stream fails.
SweepResult sweep(const Workload& w, const Target& t, const SweepOptions& options, std::ostream& csv,
                  const std::function<void(const SweepProgress&)>& progress = {});

}  // namespace atvoss::backend
