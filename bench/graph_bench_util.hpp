// Graph bench util: what the graph benchmarks (bench_execution, bench_distributed) share —
// a model's tasks at their vendor default schedules, timed noise-free, as the costs of its
// graph run, and the median wall time of a call.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

#include "backend/backend.hpp"
#include "frontend/task_set.hpp"
#include "report/graph_run.hpp"

namespace atvoss::bench {

inline report::ModelVariant vendor_defaults(const frontend::TaskSet& tasks, const Target& target) {
  report::ModelVariant v{"default", "", {}};
  for (const auto& t : tasks.tasks()) {
    const Schedule s = backend::required_default(t.workload, target);
    v.ops.push_back({t.name, t.weight, backend::measure_noise_free(target, t.workload, s), "", s});
  }
  return v;
}

template <typename F>
double median_ms(int repeat, F&& f) {
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace atvoss::bench
