// ConfigReader: reads a strategy's JSON config (search/*_config.hpp) field by field, each
// with its range, and refuses a key no field read: every error names the field and what was
// expected. A key read by two parts of one config (the ensemble's arms share epsilon) counts
// once. ConfigWriter takes the same calls and writes the fields, so a config lists its keys
// once (its visit_fields) for both. Private to search/.
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
  // A config embedded in this one (model-guided embeds the evolution keys).
  template <class Config>
  void embed(Config& c) {
    c.read(*this);
  }
  // bad_input naming the first key no read asked for, and the keys this config takes.
  void finish() const;

 private:
  const Json* find(std::string_view key);
  [[noreturn]] void fail(std::string_view key, const std::string& expected) const;

  Json config_;
  std::string context_;
  std::set<std::string, std::less<>> known_;
};

// Writes each field it is given into a JSON object (the ranges are the reader's).
class ConfigWriter {
 public:
  explicit ConfigWriter(Json& out) : out_(out) {}
  void integer(std::string_view key, const int& v, int) { out_[std::string(key)] = v; }
  void fraction(std::string_view key, const double& v, double = 0, double = 1, bool = false) {
    out_[std::string(key)] = v;
  }
  void at_least(std::string_view key, const double& v, double, bool = false) { out_[std::string(key)] = v; }
  void boolean(std::string_view key, const bool& v) { out_[std::string(key)] = v; }
  template <class Config>
  void embed(const Config& c) {
    c.write(out_);
  }

 private:
  Json& out_;
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
