// Measured precision: on a host target, each fp32 matmul task of the model run in int8 and
// bf16 on seeded real numbers with the real kernels (runtime/sensitivity.hpp), next to the
// error the NPU side can only estimate (frontend::int8_error_estimate), with each precision's
// kernel time. What the job report shows for a host model; accuracy on a labelled dataset is
// not measured (there is none here).
#pragma once

#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/target.hpp"
#include "frontend/task_set.hpp"

namespace atvoss::report {

struct MeasuredPrecision {
  std::string task;
  double estimated_int8 = 0;                     // the NPU's analytic estimate
  double int8_error = 0, bf16_error = 0;         // relative RMS against fp32; bf16 NaN: not measured
  double fp32_us = 0, int8_us = 0, bf16_us = 0;  // median kernel times, default schedules
};

struct MeasuredPrecisions {
  std::vector<MeasuredPrecision> layers;
  std::string reason;  // why there are none ("" when measured)
  Json to_json() const;
};

// Every task whose workload is an fp32 matmul the host generates, each on its own seeded
// input (seed); none, with the reason, on another target or a CPU without AVX-512 VNNI.
MeasuredPrecisions measure_host_precisions(const frontend::TaskSet& tasks, const Target& target, std::uint64_t seed);

}  // namespace atvoss::report
