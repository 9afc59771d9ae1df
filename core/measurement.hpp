// Measurement: the outcome of running one schedule — status, time and profile.
//
// Status taxonomy (TVM's codes, with the two kinds kept apart):
//   ok
//   candidate errors, data about the schedule, stored as its result:
//     invalid, compile_error, runtime_error, wrong_answer, timeout
//   infrastructure errors, never stored as the candidate's result (retried instead):
//     worker_lost, session_timeout, error
#pragma once

#include <string>
#include <vector>

#include "core/json.hpp"

namespace atvoss {

enum class Status {
  ok,
  invalid,
  compile_error,
  runtime_error,
  wrong_answer,
  timeout,
  worker_lost,
  session_timeout,
  error,
};

std::string_view to_string(Status s) noexcept;
Status parse_status(std::string_view s);  // bad_input on unknown
bool is_candidate_error(Status s) noexcept;
bool is_infrastructure_error(Status s) noexcept;

// Where the time of a run went, and how well the hardware was used.
struct Profile {
  double compute_us = 0;            // cube + vector busy time on the critical path
  double dma_us = 0;                // transfer time not hidden behind compute
  double sync_wait_us = 0;          // pipeline stalls waiting on flags / buffers
  double launch_us = 0;             // kernel launch overhead, all kernels
  double l1_hit_rate = 0;           // fraction of operand reads served on chip, 0..1
  double dma_utilisation = 0;       // busy fraction of the MTE2 path, 0..1
  double cube_utilisation = 0;      // achieved / peak MAC rate, 0..1
  double gm_bytes = 0;              // bytes moved to and from global memory
  double peak_workspace_bytes = 0;  // largest on-chip footprint of any level
  int kernels = 1;                  // kernels launched (unfused epilogues add kernels)
  double compile_us = 0;            // host backend: wall time to compile the kernel (0 on a cache hit)
  double time_cv = 0;               // host backend: coefficient of variation of the timed repeats

  Json to_json() const;
  static Profile from_json(const Json& j);  // missing fields stay 0
};

struct Measurement {
  Status status = Status::ok;
  std::string message;          // why, for any status but ok
  double time_us = 0;           // median of repeats; 0 unless ok
  std::vector<double> repeats;  // every repeat, microseconds
  Profile profile;

  bool ok() const { return status == Status::ok; }
  Json to_json() const;
  static Measurement from_json(const Json& j);  // bad_input naming the field
  static Measurement failed(Status s, std::string why);
};

// Median of values (mean of the middle two for even counts); 0 for empty.
double median(std::vector<double> values);

}  // namespace atvoss
