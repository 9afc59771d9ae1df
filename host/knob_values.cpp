#include "host/knob_values.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/error.hpp"
#include "lowering/epilogue.hpp"

namespace atvoss::host {

Knob knob(std::string_view name, std::vector<std::int64_t> values) {
  return Knob{std::string(name), std::move(values)};
}

std::vector<std::int64_t> upto(std::int64_t dim, const std::vector<std::int64_t>& values) {
  std::vector<std::int64_t> out;
  for (auto v : values) {
    if (out.empty() || v < 2 * dim) out.push_back(v);
  }
  return out;
}

std::vector<std::int64_t> fusion_values(const Workload& w) {
  const int level = lowering::full_fusion_level(w.op(), w.epilogue());
  if (level == 0) return {0};
  return {0, level};
}

std::vector<std::int64_t> thread_values(const MachineInfo& m) {
  std::int64_t cap = m.physical_cores;
  if (const char* env = std::getenv("ATVOSS_HOST_MAX_THREADS"); env && *env) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (*end != '\0' || v < 1) {
      throw_bad_input(std::string("ATVOSS_HOST_MAX_THREADS: expected a whole number >= 1, got '") + env + "'");
    }
    cap = std::min<std::int64_t>(cap, v);
  }
  std::vector<std::int64_t> values;
  for (std::int64_t t = 1; t <= cap; t *= 2) values.push_back(t);
  if (values.back() != cap) values.push_back(cap);
  return values;
}

std::int64_t closest(const std::vector<std::int64_t>& values, std::int64_t want) {
  return *std::min_element(values.begin(), values.end(), [&](auto a, auto b) {
    return std::abs(a - want) < std::abs(b - want);
  });
}

}  // namespace atvoss::host
