// Kernel Tuner cache import: turns a brute-forced GPU tuning space (Kernel Tuner's cache
// file, .json or .json.gz; format in data/recorded-spaces/README.md) into atvoss
// records, so recorded spaces can live in, merge with and export from a tuning database.
// Pure function of the file; safe from any thread.
//
// Mapping: workload {"op":"recorded","table":<path as given>}; target TargetInfo::named(
// device_name). Schedules, times and statuses come from core's RecordedSpace, so a record
// imported here has the same schedule key as one the tuner measures on that recorded
// space: integer tune_params as they are (others by index), "time"/"times" ms -> time_us
// and repeats in microseconds, "CompilationFailedConfig" -> compile_error, any other
// failure tag -> runtime_error. worker is "kernel_tuner", job is the kernel name.
#pragma once

#include <string>
#include <vector>

#include "db/record.hpp"

namespace atvoss::db {

// True if the file looks like a Kernel Tuner cache (by name: .json.gz, or .json whose
// first object has "cache" and "tune_params_keys").
bool is_kernel_tuner_cache(const std::string& path);

// bad_input naming the cache key and field on malformed content; io if unreadable.
std::vector<Record> read_kernel_tuner_cache(const std::string& path);

}  // namespace atvoss::db
