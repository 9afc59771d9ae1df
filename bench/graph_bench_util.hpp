// Graph bench util: what the graph benchmarks (bench_execution, bench_distributed) share —
// the median wall time of a call.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace atvoss::bench {

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
