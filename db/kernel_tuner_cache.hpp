// Kernel Tuner cache import and export: turns a brute-forced GPU tuning space (Kernel
// Tuner's cache file, .json or .json.gz; format in data/recorded-spaces/README.md, names
// and tags in core/kernel_tuner_format.hpp) into atvoss records, so recorded spaces can
// live in, merge with and export from a tuning database; and writes a workload's records
// back out as a cache that Kernel Tuner's simulation mode reads, so a Kernel Tuner user
// can replay what atvoss measured. Pure functions of their inputs; safe from any thread.
//
// Import mapping: workload {"op":"recorded","table":<path as given>}; target
// TargetInfo::named(device_name). Schedules, times and statuses come from core's
// RecordedSpace, so a record imported here has the same schedule key as one the tuner
// measures on that recorded space: integer tune_params as they are (others by index),
// "time"/"times" ms -> time_us and repeats in microseconds, "CompilationFailedConfig" ->
// compile_error, any other failure tag -> runtime_error. worker is "kernel_tuner", job is
// the kernel name. A cache tuned for another objective keeps its cost in time_us
// (kernel_tuner::Objective).
//
// Export mapping (the inverse, so that importing an export gives the same schedules, times
// and statuses): tune_params_keys are the schedule's knobs, in the order of the cache the
// records were imported from while that file is readable (Kernel Tuner's cache keys follow
// it), else sorted as Schedule keeps them; tune_params each knob's values seen, sorted;
// device_name is the target's name;
// objective "time", or the source cache's objective and (then) objective_higher_is_better
// while that file is readable. One entry per schedule: its fastest ok record (time = time_us in
// ms, times = repeats in ms, benchmark_time = their sum; for another objective, that field
// holds its value, converted back from the cost, and no time is written, none being
// known), else its newest failed one tagged by kernel_tuner::tag_of. Schedules with only invalid or
// infrastructure-error records are left out: to Kernel Tuner an absent configuration is one that breaks the
// restrictions. atvoss does not record compile or verification time: they are written as 0, which simulation mode needs
// present but a time budget then does not charge.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/record.hpp"

namespace atvoss::db {

// True if the file looks like a Kernel Tuner cache (by name: .json.gz, or .json whose
// first object has "cache" and "tune_params_keys").
bool is_kernel_tuner_cache(const std::string& path);

// bad_input naming the cache key and field on malformed content; io if unreadable.
std::vector<Record> read_kernel_tuner_cache(const std::string& path);

struct KernelTunerExportReport {
  std::int64_t entries = 0;  // configurations written
  std::int64_t failed = 0;   // ... of which with a failure tag
  std::int64_t skipped = 0;  // schedules left out (only invalid or infrastructure errors)
  std::string kernel_name, device_name, path;
  Json to_json() const;
};

// Writes records (one workload on one target; history() gives them) as a Kernel Tuner
// cache at path, which must end in .json: Kernel Tuner reads plain JSON only. kernel_name
// empty: the job of records imported from a Kernel Tuner cache (their kernel), else the
// workload's op. Written to a temporary file and renamed, so path is never half written.
// bad_input if records are empty, mix workloads, targets or knob sets, or leave nothing to
// write; io if path cannot be written.
KernelTunerExportReport write_kernel_tuner_cache(const std::vector<Record>& records, const std::string& path,
                                                 const std::string& kernel_name = "");

}  // namespace atvoss::db
