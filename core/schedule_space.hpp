// ScheduleSpace: the knobs of one workload on one target, each an ordered list of
// integer values, plus a validity check that explains every rejection in words.
// Search strategies work on points as knob-value indices (Point); the space turns
// them into Schedules. Spaces are generic: the simulator builds them per op, and
// recorded_space.hpp builds them from tables of recorded measurements.
// Thread-safety: const methods are safe from many threads if the check is.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/schedule.hpp"

namespace atvoss {

struct Knob {
  std::string name;
  std::vector<std::int64_t> values;  // ordered, distinct; neighbours are "close" for mutation
  // For a knob added after schedules were stored: the value a schedule that lacks it
  // takes (it was measured with that behaviour), so older records stay in the space.
  std::optional<std::int64_t> absent = std::nullopt;
};

// A point: index into each knob's value list, in knob order.
using Point = std::vector<int>;

struct Verdict {
  bool ok = true;
  std::string reason;  // empty when ok; otherwise names the limit broken, e.g. "L0A: 96 KB > 64 KB"
  static Verdict valid() { return {}; }
  static Verdict invalid(std::string why) { return {false, std::move(why)}; }
};

class ScheduleSpace {
 public:
  using Check = std::function<Verdict(const Schedule&)>;

  ScheduleSpace() = default;
  // REQUIRES: every knob has at least one value. check may be empty (all points valid).
  ScheduleSpace(std::vector<Knob> knobs, Check check);

  const std::vector<Knob>& knobs() const { return knobs_; }
  std::size_t dimensions() const { return knobs_.size(); }
  // Number of points (product of list sizes), saturating at UINT64_MAX.
  std::uint64_t size() const { return size_; }

  Schedule schedule_at(const Point& p) const;
  // Flat index in mixed radix, first knob most significant. REQUIRES: i < size().
  Point point_at(std::uint64_t i) const;
  std::uint64_t flat_index(const Point& p) const;
  // Index of each knob's value; nullopt if a knob is missing (and has no `absent`
  // value), extra, or off-list.
  std::optional<Point> point_of(const Schedule& s) const;

  // Validates membership (missing/extra knob, value outside the list) and then
  // the space's own check; the reason names the knob or the limit. A missing knob
  // with an `absent` value is present at that value.
  Verdict check(const Schedule& s) const;
  // Schedule from JSON; bad_input naming the knob if it does not belong to this space.
  Schedule parse(const Json& j) const;

  Point random_point(std::mt19937_64& rng) const;
  // Uniform random valid point; nullopt after max_tries rejections.
  std::optional<Point> random_valid_point(std::mt19937_64& rng, int max_tries = 10000) const;

  Json describe() const;  // {"knobs":[{"name":..,"values":[..]}], "size": n}

 private:
  std::vector<Knob> knobs_;
  Check check_;
  std::uint64_t size_ = 0;
};

}  // namespace atvoss
