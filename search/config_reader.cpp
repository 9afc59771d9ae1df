#include "search/internal/config_reader.hpp"

#include <algorithm>
#include <sstream>

#include "core/error.hpp"

namespace atvoss::search {

ConfigReader::ConfigReader(const Json& config, std::string context)
    : config_(config.is_null() ? Json::object() : config), context_(std::move(context)) {
  if (!config_.is_object()) throw_bad_input(context_ + ": expected a JSON object, got " + config_.dump());
}

const Json* ConfigReader::find(std::string_view key) {
  known_.emplace(key);
  const auto it = config_.find(std::string(key));
  return it == config_.end() ? nullptr : &*it;
}

void ConfigReader::fail(std::string_view key, const std::string& expected) const {
  throw_bad_input(context_ + ": field '" + std::string(key) + "' must be " + expected);
}

void ConfigReader::integer(std::string_view key, int& v, int min) {
  const Json* j = find(key);
  if (!j) return;
  if (!j->is_number_integer()) fail(key, "an integer >= " + std::to_string(min));
  v = integer_as<int>(*j, key, context_);
  if (v < min) fail(key, ">= " + std::to_string(min));
}

void ConfigReader::fraction(std::string_view key, double& v, double lo, double hi, bool lo_open) {
  const Json* j = find(key);
  if (!j) return;
  std::ostringstream range;
  range << "in " << (lo_open ? "(" : "[") << lo << ", " << hi << "]";
  if (!j->is_number()) fail(key, "a number " + range.str());
  v = j->get<double>();
  if (!((lo_open ? v > lo : v >= lo) && v <= hi)) fail(key, range.str());
}

void ConfigReader::at_least(std::string_view key, double& v, double min, bool open) {
  const Json* j = find(key);
  if (!j) return;
  std::ostringstream range;
  range << (open ? "> " : ">= ") << min;
  if (!j->is_number()) fail(key, "a number " + range.str());
  v = j->get<double>();
  if (!(open ? v > min : v >= min)) fail(key, range.str());
}

void ConfigReader::boolean(std::string_view key, bool& v) {
  const Json* j = find(key);
  if (!j) return;
  if (!j->is_boolean()) fail(key, "true or false");
  v = j->get<bool>();
}

void ConfigReader::names(std::string_view key, std::vector<std::string>& v, const std::vector<std::string>& allowed) {
  const Json* j = find(key);
  if (!j) return;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  if (!j->is_array() || j->empty()) fail(key, "a non-empty list of " + list);
  std::vector<std::string> out;
  for (const Json& e : *j) {
    if (!e.is_string()) fail(key, "a list of " + list + " (got " + e.dump() + ")");
    const std::string name = e.get<std::string>();
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      fail(key, "a list of " + list + " (got '" + name + "')");
    }
    if (std::find(out.begin(), out.end(), name) != out.end()) {
      fail(key, "a list without repeats (got '" + name + "' twice)");
    }
    out.push_back(name);
  }
  v = std::move(out);
}

void ConfigReader::finish() const {
  for (const auto& [key, value] : config_.items()) {
    if (known_.count(key)) continue;
    std::string keys;
    for (const auto& k : known_) keys += (keys.empty() ? "" : ", ") + k;
    throw_bad_input(context_ + ": unknown field '" + key + "'; this strategy takes " +
                    (keys.empty() ? std::string("no fields") : keys));
  }
}

}  // namespace atvoss::search
