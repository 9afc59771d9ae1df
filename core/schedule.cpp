#include "core/schedule.hpp"

#include "core/error.hpp"

namespace atvoss {

Schedule Schedule::from_json(const Json& j) {
  require_object(j, "schedule");
  std::map<std::string, std::int64_t> values;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_number_integer()) {
      throw_bad_input("schedule: knob '" + k + "' must be an integer, got " + v.dump());
    }
    values[k] = integer_as<std::int64_t>(v, k, "schedule");  // 2^64-1 wrapped to -1
  }
  return Schedule(std::move(values));
}

Json Schedule::to_json() const {
  Json j = Json::object();
  for (const auto& [k, v] : values_) j[k] = v;
  return j;
}

std::int64_t Schedule::at(const std::string& knob) const {
  auto it = values_.find(knob);
  if (it == values_.end()) throw Error(ErrorKind::internal, "schedule has no knob '" + knob + "'");
  return it->second;
}

std::int64_t Schedule::get_or(const std::string& knob, std::int64_t fallback) const {
  auto it = values_.find(knob);
  return it == values_.end() ? fallback : it->second;
}

}  // namespace atvoss
