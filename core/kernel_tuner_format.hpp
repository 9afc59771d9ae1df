// Kernel Tuner's cache file format in one place: the field names, failure tags, units and
// cache keys that RecordedSpace reads (core/recorded_space.cpp) and that db's import and
// export read and write (db/kernel_tuner_cache.cpp). The layout is described in
// data/recorded-spaces/README.md. What Kernel Tuner itself relies on (kernel_tuner/util.py
// process_cache/read_cache, runners/simulation.py):
//   - plain JSON text (it opens the file as text: no gzip), ending in "}\n}" or "}}}" with
//     "cache" the last top-level field, else it takes the file for an unfinished one and
//     appends closing brackets;
//   - device_name, kernel_name and tune_params_keys (the order of the values in each key),
//     checked against the tuning call; problem_size only checked when present;
//   - cache entries keyed by the parameter values joined with "," as Python's str() prints
//     them, each holding the parameters, the objective "time" in ms (a number, or a failure
//     tag) and, for simulation mode, compile_time, verification_time and benchmark_time (ms).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "core/measurement.hpp"

namespace atvoss::kernel_tuner {

// Top-level fields.
inline constexpr char kDeviceName[] = "device_name";
inline constexpr char kKernelName[] = "kernel_name";
inline constexpr char kProblemSize[] = "problem_size";
inline constexpr char kTuneParamsKeys[] = "tune_params_keys";
inline constexpr char kTuneParams[] = "tune_params";
inline constexpr char kObjective[] = "objective";
inline constexpr char kObjectiveHigherIsBetter[] = "objective_higher_is_better";
inline constexpr char kCache[] = "cache";
// Optional: tune_kernel's restrictions as strings; a cache entry that breaks one is not a
// configuration of the space (core/constraint.hpp parses them).
inline constexpr char kRestrictions[] = "restrictions";

// Fields of one cache entry (besides its parameters). Every time is in milliseconds.
inline constexpr char kTime[] = "time";    // the objective: ms, or a failure tag
inline constexpr char kTimes[] = "times";  // per-repeat ms (valid configurations only)
inline constexpr char kCompileTime[] = "compile_time";
inline constexpr char kVerificationTime[] = "verification_time";
inline constexpr char kBenchmarkTime[] = "benchmark_time";
inline constexpr char kStrategyTime[] = "strategy_time";
inline constexpr char kFrameworkTime[] = "framework_time";

// Failure tags Kernel Tuner writes in "time".
inline constexpr char kCompilationFailed[] = "CompilationFailedConfig";
inline constexpr char kRuntimeFailed[] = "RuntimeFailedConfig";

inline constexpr double kUsPerMs = 1000.0;

// A name Kernel Tuner caches go by: .json, or .json.gz (a recorded space, compressed).
bool is_cache_file_name(const std::string& path);

// An object with "cache" and "tune_params_keys": what sets a cache apart from other JSON.
bool looks_like_cache(const Json& doc);

// The candidate error a failure tag stands for: compile_error for CompilationFailedConfig,
// runtime_error for RuntimeFailedConfig and any other tag.
Status status_of_tag(std::string_view tag);

// The tag written for a failed measurement: the inverse of status_of_tag for compile and
// runtime errors (wrong_answer and timeout are runtime failures to Kernel Tuner, which has
// no tag of its own for them). nullopt for ok, for invalid (a configuration that breaks
// the space's restrictions is absent from a cache) and for infrastructure errors (they
// say nothing about the configuration).
std::optional<std::string_view> tag_of(Status status);

// What a cache was tuned for: "objective" (default "time") and "objective_higher_is_better"
// (default false, as in Kernel Tuner's tune_kernel). Schedules are ranked by a cost the
// tuner minimises, kept where measurements keep a time (Measurement::time_us):
//   - "time": the time in microseconds (the cache's ms x 1000), as before objectives;
//   - any other objective (an entry's field of that name, a number > 0): its value when
//     lower is better, 1 / value when higher is better (a throughput such as "GFLOP/s":
//     for one problem its reciprocal is proportional to the time).
struct Objective {
  std::string name = kTime;
  bool higher_is_better = false;

  bool is_time() const { return name == kTime; }
  double cost_of(double value) const { return higher_is_better ? 1.0 / value : value; }
  double value_of(double cost) const { return higher_is_better ? 1.0 / cost : cost; }
  Json to_json() const;
};

// The cache document's objective; bad_input naming the field (where: the file) if "objective"
// is not a string, the flag not a bool, "time" is said to be better higher, or another
// objective leaves the flag out (atvoss does not guess whether a figure is a cost).
Objective objective_of(const Json& doc, const std::string& where);

// The key of a configuration: its values joined with ",", as Kernel Tuner builds it
// (",".join(str(v) ...)) for integer values.
std::string cache_key(const std::vector<std::int64_t>& values);

}  // namespace atvoss::kernel_tuner
