// RecordedSpace: a schedule space loaded from a table of recorded measurements
// (any knob names), so search strategies can be benchmarked on real hardware
// landscapes where the optimum is known. Workloads {"op":"recorded","table":path}
// are served by it instead of the simulator.
//
// Two file formats, chosen by the file name:
//
// 1. CSV (any name not ending in .json / .json.gz). One header row, then one row per
//    configuration, comma separated, no quoting:
//        tile_m,tile_n,time_us,status
//        64,128,12.5,ok
//        64,256,,compile_error
//    The knob columns come first, in any number and with any names (they become the
//    knobs, in column order); the last two columns are exactly time_us and status.
//    Knob values are integers. time_us is a decimal number > 0 when status is ok
//    (it may be empty otherwise); status is a Measurement status name (ok, invalid,
//    compile_error, ...). Blank lines are skipped. Each knob's value list is the sorted
//    set of values seen in its column.
//
// 2. Kernel Tuner cache file (.json, or .json.gz read through zlib; the format is in
//    data/recorded-spaces/README.md). The knobs are tune_params_keys in order,
//    each with the domain listed in tune_params. Schedules hold integers only, so each
//    parameter is mapped as follows: when every value in its tune_params list is a JSON
//    integer, the values are used as they are (sorted ascending for neighbourhoods);
//    otherwise (floats, strings, booleans) value i of the tune_params list becomes the
//    integer i, in tune_params order. Times are converted from ms to us; "times" become
//    the repeats. A "time" that is a string (CompilationFailedConfig, RuntimeFailedConfig,
//    ...) is a failed configuration. A cache tuned for another objective ("objective",
//    "objective_higher_is_better") is ranked by it: the measurement's time_us is then the
//    objective's cost (kernel_tuner::Objective: the value, or 1 / value when higher is
//    better), not a time.
//
// Validity: a configuration absent from the table broke the kernel's restrictions, which
// a tuner knows before running anything, so space().check() rejects it ("not in the
// recorded table") and measure() returns invalid. A failed configuration is in the space
// (check() accepts it, since a real tuner finds the failure only by running it) and
// measure() returns its candidate error: compile_error for CompilationFailedConfig,
// runtime_error for RuntimeFailedConfig and any other failure tag, or the CSV status.
//
// Thread-safety: immutable after load(); every const method is safe from many threads.
// load() itself is thread-safe (its cache is guarded by a mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/kernel_tuner_format.hpp"
#include "core/measurement.hpp"
#include "core/schedule_space.hpp"

namespace atvoss {

class RecordedSpace {
 public:
  // Loads a table, or returns the one already loaded from the same path. io error if the
  // file cannot be read; bad_input naming the line (CSV) or key/field (JSON) if malformed.
  static std::shared_ptr<const RecordedSpace> load(const std::string& path);
  // Parses without caching: text is the file's content, format picked from name as above.
  static std::shared_ptr<const RecordedSpace> parse(const std::string& text, const std::string& name);

  ~RecordedSpace();
  RecordedSpace(const RecordedSpace&) = delete;
  RecordedSpace& operator=(const RecordedSpace&) = delete;

  // Knobs as described above; check() rejects configurations absent from the table.
  const ScheduleSpace& space() const;
  // Recorded time in microseconds with its repeats; invalid if absent, the recorded
  // candidate error if failed. Never throws for a schedule outside the space.
  Measurement measure(const Schedule& schedule) const;
  // Best recorded time (microseconds; the objective's cost for other objectives), if any
  // configuration succeeded.
  std::optional<double> optimum_us() const;
  // Every configuration in the table (succeeded or failed), in file order.
  std::vector<Schedule> configurations() const;
  // Number of configurations in the table, and how many of them failed.
  std::size_t recorded_count() const;
  std::size_t failed_count() const;
  // Where the table came from (the path given to load, or the name given to parse).
  const std::string& source() const;
  // What time_us ranks: time (CSV tables, most caches) or the cache's objective.
  const kernel_tuner::Objective& objective() const;

 private:
  struct Impl;
  explicit RecordedSpace(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace atvoss
