// JSON values a hand-edited or hostile file may hold where a number is expected: zero, signs,
// the int64 and uint64 limits, huge and fractional doubles, and every other JSON type. The
// seeded mutation tests of the files atvoss reads (memory plans, model plans) draw from it.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "core/json.hpp"

namespace atvoss {

inline const std::vector<Json>& hostile_json_values() {
  static const std::vector<Json> values = [] {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    return std::vector<Json>{0,
                             -1,
                             1,
                             3,
                             5,
                             64,
                             kMax,
                             kMax - 1,
                             -kMax,
                             -kMax - 1,
                             std::int64_t{1} << 40,
                             std::int64_t{1} << 62,
                             1e300,
                             -1e300,
                             0.5,
                             "x",
                             nullptr,
                             Json::array(),
                             Json::object(),
                             true,
                             std::numeric_limits<std::uint64_t>::max()};
  }();
  return values;
}

}  // namespace atvoss
