#include "core/schedule_space.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"

namespace atvoss {

ScheduleSpace::ScheduleSpace(std::vector<Knob> knobs, Check check)
    : knobs_(std::move(knobs)), check_(std::move(check)), size_(1) {
  for (const auto& k : knobs_) {
    if (k.values.empty()) throw Error(ErrorKind::internal, "knob '" + k.name + "' has no values");
    const auto n = static_cast<std::uint64_t>(k.values.size());
    size_ =
        size_ > std::numeric_limits<std::uint64_t>::max() / n ? std::numeric_limits<std::uint64_t>::max() : size_ * n;
  }
}

Schedule ScheduleSpace::schedule_at(const Point& p) const {
  std::map<std::string, std::int64_t> values;
  for (std::size_t i = 0; i < knobs_.size(); ++i) values[knobs_[i].name] = knobs_[i].values[p[i]];
  return Schedule(std::move(values));
}

Point ScheduleSpace::point_at(std::uint64_t i) const {
  Point p(knobs_.size());
  for (std::size_t d = knobs_.size(); d-- > 0;) {
    const auto n = knobs_[d].values.size();
    p[d] = static_cast<int>(i % n);
    i /= n;
  }
  return p;
}

std::uint64_t ScheduleSpace::flat_index(const Point& p) const {
  std::uint64_t i = 0;
  for (std::size_t d = 0; d < knobs_.size(); ++d) i = i * knobs_[d].values.size() + p[d];
  return i;
}

std::optional<Point> ScheduleSpace::point_of(const Schedule& s) const {
  Point p(knobs_.size());
  std::size_t present = 0;
  for (std::size_t d = 0; d < knobs_.size(); ++d) {
    auto it = s.values().find(knobs_[d].name);
    if (it == s.values().end() && !knobs_[d].absent) return std::nullopt;
    present += it != s.values().end() ? 1 : 0;
    const std::int64_t value = it != s.values().end() ? it->second : *knobs_[d].absent;
    const auto& vals = knobs_[d].values;
    auto pos = std::find(vals.begin(), vals.end(), value);
    if (pos == vals.end()) return std::nullopt;
    p[d] = static_cast<int>(pos - vals.begin());
  }
  if (present != s.values().size()) return std::nullopt;  // an extra knob
  return p;
}

namespace {
std::string list_values(const std::vector<std::int64_t>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < 24; ++i) out += (i ? "," : "") + std::to_string(v[i]);
  if (v.size() > 24) out += ",...";
  return out;
}
}  // namespace

Verdict ScheduleSpace::check(const Schedule& s) const {
  for (const auto& k : knobs_) {
    if (!s.has(k.name) && !k.absent) return Verdict::invalid("missing knob '" + k.name + "'");
    const auto v = s.get_or(k.name, k.absent.value_or(0));
    if (std::find(k.values.begin(), k.values.end(), v) == k.values.end()) {
      return Verdict::invalid("knob '" + k.name + "' = " + std::to_string(v) +
                              " is outside the space; expected one of " + list_values(k.values));
    }
  }
  for (const auto& [name, v] : s.values()) {
    const bool known = std::any_of(knobs_.begin(), knobs_.end(), [&](const Knob& k) { return k.name == name; });
    if (!known) return Verdict::invalid("unknown knob '" + name + "'");
  }
  return check_ ? check_(s) : Verdict::valid();
}

Schedule ScheduleSpace::parse(const Json& j) const {
  Schedule s = Schedule::from_json(j);
  for (const auto& k : knobs_) {
    if (!s.has(k.name)) throw_bad_input("schedule: missing knob '" + k.name + "'");
    const auto v = s.at(k.name);
    if (std::find(k.values.begin(), k.values.end(), v) == k.values.end()) {
      throw_bad_input("schedule: knob '" + k.name + "' = " + std::to_string(v) +
                      " is outside the space; expected one of " + list_values(k.values));
    }
  }
  if (s.values().size() != knobs_.size()) {
    for (const auto& [name, v] : s.values()) {
      const bool known = std::any_of(knobs_.begin(), knobs_.end(), [&](const Knob& k) { return k.name == name; });
      if (!known) throw_bad_input("schedule: unknown knob '" + name + "'");
    }
  }
  return s;
}

Point ScheduleSpace::random_point(std::mt19937_64& rng) const {
  Point p(knobs_.size());
  for (std::size_t d = 0; d < knobs_.size(); ++d) {
    p[d] = static_cast<int>(rng() % knobs_[d].values.size());
  }
  return p;
}

std::optional<Point> ScheduleSpace::random_valid_point(std::mt19937_64& rng, int max_tries) const {
  for (int t = 0; t < max_tries; ++t) {
    Point p = random_point(rng);
    if (!check_ || check_(schedule_at(p)).ok) return p;
  }
  return std::nullopt;
}

Json ScheduleSpace::describe() const {
  Json knobs = Json::array();
  for (const auto& k : knobs_) knobs.push_back({{"name", k.name}, {"values", k.values}});
  return {{"knobs", knobs}, {"size", size_}};
}

}  // namespace atvoss
