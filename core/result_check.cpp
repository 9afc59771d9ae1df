#include "core/result_check.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "core/error.hpp"

namespace atvoss {
namespace {

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

void check_result(const Measurement& m) {
  for (double r : m.repeats) {
    if (!plausible_time_us(r)) {
      throw_bad_input("measurement: field 'repeats' must hold times from " + number_text(kMinTimeUs) + " to " +
                      number_text(kMaxTimeUs) + " microseconds, got " + number_text(r));
    }
  }
  if (!m.ok()) return;
  if (!plausible_time_us(m.time_us)) {
    throw_bad_input("measurement: field 'time_us' must be a time from " + number_text(kMinTimeUs) + " to " +
                    number_text(kMaxTimeUs) + " microseconds when the status is ok, got " + number_text(m.time_us));
  }
  if (m.repeats.empty()) return;
  const auto [lo, hi] = std::minmax_element(m.repeats.begin(), m.repeats.end());
  const double slack = 1e-9 * *hi;  // a mean computed elsewhere may round past its inputs
  if (m.time_us < *lo - slack || m.time_us > *hi + slack) {
    throw_bad_input("measurement: field 'time_us' (" + number_text(m.time_us) +
                    ") must lie between the smallest and the largest of 'repeats' (" + number_text(*lo) + " .. " +
                    number_text(*hi) + ")");
  }
}

}  // namespace atvoss
