// Recompute: a model plan's end-to-end figure from the plan file alone — the model's graph,
// each task's schedule, the transposes and the graph knobs it holds, run again through the
// same graph run (graph_run.hpp). On a simulated target each kernel is also simulated again
// (noise-free) and any time that differs from the plan's is listed; on a real machine the
// plan's measured times are taken as they are (a new measurement is another measurement).
// `atvoss-analyze --plan FILE` prints it. Threading: the caller's thread.
#pragma once

#include <string>
#include <vector>

#include "plan/model_plan.hpp"

namespace atvoss::plan {

struct Recomputed {
  double end_to_end_us = 0;
  bool retimed = false;                 // kernels simulated again (a simulated target)
  std::vector<std::string> mismatches;  // "<task>: plan 12.3 us, simulated now 12.9 us"
  double relative_error(const ModelPlan& p) const {
    return p.end_to_end_us > 0 ? (end_to_end_us - p.end_to_end_us) / p.end_to_end_us : 0;
  }
};

// bad_input naming the task when a schedule is not valid for its workload on the plan's target.
Recomputed recompute(const ModelPlan& plan);

}  // namespace atvoss::plan
