// Runner: measures one compiled kernel in a child process (atvoss-kernel-runner, spawned with
// a wall-clock limit), so a kernel that crashes or hangs is that candidate's runtime_error or
// timeout and the caller lives on. The child is found through $ATVOSS_KERNEL_RUNNER, next to
// the calling executable, or at the build path CMake configured.
#pragma once

#include <string>

#include "core/cancel.hpp"
#include "core/measurement.hpp"
#include "core/workload.hpp"
#include "host/kernel_timing.hpp"

namespace atvoss::host {

struct RunOptions {
  TimingOptions timing;
  double timeout_s = 60;
  std::string runner;      // empty: find_runner()
  CancelFlag cancel = {};  // raised: the child is killed, the result is `error`
};

// io error listing the places tried if there is none.
std::string find_runner();

// ok (time_us = median, repeats), wrong_answer, runtime_error (crash, failed load), timeout,
// or error when options.cancel was raised.
Measurement run_kernel(const std::string& so_path, const Workload& w, const RunOptions& options);

}  // namespace atvoss::host
