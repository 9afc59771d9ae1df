// ConfigReader: reads a strategy's JSON config (search/*_config.hpp) field by field, each
// with its range, and refuses a key no field read: every error names the field and what was
// expected. A key read by two parts of one config (the ensemble's arms share epsilon) counts
// once. Private to search/.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"

namespace atvoss::search {

class ConfigReader {
 public:
  // bad_input "<context>: expected a JSON object" unless config is one (null counts as {}).
  ConfigReader(const Json& config, std::string context);

  // Each reads key into v when present (v keeps its default otherwise) and checks the range.
  void integer(std::string_view key, int& v, int min);
  // In [lo, hi], or (lo, hi] when lo_open.
  void fraction(std::string_view key, double& v, double lo = 0, double hi = 1, bool lo_open = false);
  // >= min, or > min when open.
  void at_least(std::string_view key, double& v, double min, bool open = false);
  void boolean(std::string_view key, bool& v);
  // A non-empty list of distinct names from `allowed`.
  void names(std::string_view key, std::vector<std::string>& v, const std::vector<std::string>& allowed);
  // bad_input naming the first key no read asked for, and the keys this config takes.
  void finish() const;

 private:
  const Json* find(std::string_view key);
  [[noreturn]] void fail(std::string_view key, const std::string& expected) const;

  Json config_;
  std::string context_;
  std::set<std::string, std::less<>> known_;
};

// Config::from_json and to_json for a config with read(ConfigReader&) and write(Json&).
template <class Config>
Config read_config(const Json& config, std::string context) {
  ConfigReader r(config, std::move(context));
  Config c;
  c.read(r);
  r.finish();
  return c;
}

template <class Config>
Json write_config(const Config& c) {
  Json out = Json::object();
  c.write(out);
  return out;
}

}  // namespace atvoss::search
