// Schedule: one integer value per knob, e.g. {"tile_m":64,"tile_n":128,...}.
// It is what the tuner proposes, the measurer runs and the database stores;
// its key() is the stable hash of its canonical JSON (json.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/json.hpp"

namespace atvoss {

class Schedule {
 public:
  Schedule() = default;
  explicit Schedule(std::map<std::string, std::int64_t> values) : values_(std::move(values)) {}

  // Parses {"knob": int, ...}; bad_input if not an object of integers.
  // Membership in a space is checked by ScheduleSpace::parse, not here.
  static Schedule from_json(const Json& j);
  Json to_json() const;
  std::string key() const { return stable_key(to_json()); }

  const std::map<std::string, std::int64_t>& values() const { return values_; }
  bool has(const std::string& knob) const { return values_.count(knob) != 0; }
  std::int64_t at(const std::string& knob) const;  // internal error if absent
  // Value of knob, or fallback where this schedule has no such knob.
  std::int64_t get_or(const std::string& knob, std::int64_t fallback) const;
  void set(const std::string& knob, std::int64_t value) { values_[knob] = value; }

  friend bool operator==(const Schedule&, const Schedule&) = default;
  friend auto operator<=>(const Schedule&, const Schedule&) = default;

 private:
  std::map<std::string, std::int64_t> values_;
};

}  // namespace atvoss
