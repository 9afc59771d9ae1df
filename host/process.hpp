// Process: runs a program as a child (posix_spawn, never fork of this possibly multithreaded
// process) with a wall-clock limit, capturing stdout and stderr. Used by the builder (the
// compiler) and the runner (atvoss-kernel-runner); a child that outlives the limit, or whose
// caller raises its cancel flag (core/cancel.hpp, polled every 50 ms), is killed.
#pragma once

#include <string>
#include <vector>

#include "core/cancel.hpp"

namespace atvoss::host {

struct ProcessResult {
  bool started = false;  // false: the program could not be spawned (message in err)
  bool timed_out = false;
  bool cancelled = false;  // killed because the cancel flag was raised
  int exit_code = -1;      // when it exited
  int signal = 0;          // when a signal ended it
  std::string out, err;
};

ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s, const CancelFlag& cancel = {});

}  // namespace atvoss::host
