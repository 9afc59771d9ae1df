#include "host/knob_values.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>

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
  // Unsigned distances: want may be any int64 (a hand-edited table's), and a - want overflows.
  const auto distance = [want](std::int64_t a) {
    const auto ua = static_cast<std::uint64_t>(a), uw = static_cast<std::uint64_t>(want);
    return a > want ? ua - uw : uw - ua;
  };
  return *std::min_element(values.begin(), values.end(),
                           [&](std::int64_t a, std::int64_t b) { return distance(a) < distance(b); });
}

namespace {

bool shrink_from(const ScheduleSpace& space, Schedule& s, std::span<const std::string_view> names) {
  if (names.empty()) return space.check(s).ok;
  const auto k =
      std::find_if(space.knobs().begin(), space.knobs().end(), [&](const Knob& x) { return x.name == names[0]; });
  if (k == space.knobs().end()) return shrink_from(space, s, names.subspan(1));
  const std::int64_t start = s.at(k->name);
  for (auto v = k->values.rbegin(); v != k->values.rend(); ++v) {
    if (*v > start) continue;
    s.set(k->name, *v);
    if (shrink_from(space, s, names.subspan(1))) return true;
  }
  s.set(k->name, start);
  return false;
}

}  // namespace

bool shrink_until_valid(const ScheduleSpace& space, Schedule& s, std::vector<std::string_view> names) {
  return shrink_from(space, s, names);
}

}  // namespace atvoss::host
