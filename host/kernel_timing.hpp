// Kernel timing: what atvoss-kernel-runner does inside its own process (runner.hpp spawns it)
// — load a compiled kernel, run it once on inputs drawn from a seed and check the result
// against the reference (operands.hpp; max relative error <= 1e-4, else wrong_answer), then
// time it as TVM and Kernel Tuner do: a warm-up, enough inner iterations that each timed
// repeat lasts >= min_repeat_us, `repeat` repeats reported as median and coefficient of
// variation, pinned to as many cores as the kernel has threads (kernel_abi.hpp; one CPU per
// physical core, pinning.hpp), and measured again (up to max_remeasures times) while the
// variation exceeds max_cv. Never call it in a process that must survive a faulty kernel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/workload.hpp"

namespace atvoss::host {

inline constexpr double kMaxRelativeError = 1e-4;

// The largest max_relative_error (operands.hpp) a right kernel for w may show: kMaxRelativeError
// up to reductions of 1024 terms, then growing as the square root of the terms reduced into each
// output (fp32 accumulation's rounding grows so: a correct 512-channel 3x3 conv, 4608 terms,
// showed 1.1e-4 over its 860k outputs). Row ops: kMaxRelativeError.
double allowed_relative_error(const Workload& w);

struct TimingOptions {
  std::uint64_t seed = 0;
  int repeat = 5;
  int cpu = -1;           // first core to pin to; -1: the last cores of this process's set
  std::vector<int> cpus;  // the cores leased for this kernel (core_pool.hpp); overrides cpu
  double min_repeat_us = 1000;
  double max_cv = 0.05;
  int max_remeasures = 2;
  // Time the kernel as a model's run calls it: its threads kept awake between calls (a brief
  // spin, GOMP_SPINCOUNT, unless the caller set one), where a kernel timed alone waits
  // passively and pays a wake-up per parallel region that a model's back-to-back kernels do
  // not (docs/host-backend.md, "Waiting"); and its output and residual cold, each call's in
  // another copy, as a layer finds them, where a kernel timed alone keeps both in cache.
  bool as_in_a_model = false;
};

// {"status": "ok"|"wrong_answer", "time_us", "repeats", "cv", "inner", "remeasured",
//  "max_rel_error", "threads", "cpus", "process_threads" (after the first call),
//  "prepacked_weights" (the timed calls read weights packed once, before them, and that path
//  was checked too: packed_weights.hpp; a conv's filters and a matmul's B, not a
//  batch_matmul's), "weight_copies" (how many copies of them the timed calls rotate over, so
//  that each reads its weights from memory as in a model; 0: none prepacked), "u8_output" (the kernel writes u8 codes,
//  kernel_abi.hpp, and was timed writing them, after its fp32 output and its codes were both
//  checked), "message"}.
// bad_input (naming --so) if so_path is not a regular file or not a loadable atvoss kernel.
Json time_kernel(const std::string& so_path, const Workload& w, const TimingOptions& options);

// The repeats' population standard deviation over their mean (time_kernel's "cv"); 0 for a
// mean of 0. REQUIRES: v is not empty.
double coefficient_of_variation(const std::vector<double>& v);

}  // namespace atvoss::host
