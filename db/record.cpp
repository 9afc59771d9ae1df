#include "db/record.hpp"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "core/error.hpp"
#include "db/tuning_database.hpp"

namespace atvoss::db {

std::string default_tool_version() {
#ifdef ATVOSS_VERSION
  return ATVOSS_VERSION;
#else
  return "unknown";
#endif
}

TargetInfo TargetInfo::from_target(const Target& target) {
  return TargetInfo{target.key(), target.name, target.to_json()};
}

TargetInfo TargetInfo::named(const std::string& name) {
  if (name.empty()) throw_bad_input("target: a target name must not be empty");
  Json description{{"name", name}};
  return TargetInfo{stable_key(description), name, description};
}

void TargetInfo::check() const {
  if (description.is_object() && description.size() == 1 && description.contains("name")) {
    if (description != named(name).description || key != named(name).key) {
      throw_bad_input("record.target: key '" + key + "' and name '" + name + "' do not match the description " +
                      description.dump() + " (edited?)");
    }
    return;
  }
  Target t;
  try {
    t = Target::from_json(description);
  } catch (const Error& e) {
    throw_bad_input(
        "record.target: field 'description' is neither a name-only target {\"name\": ...} "
        "nor a target this build reads: " +
        std::string(e.what()));
  }
  if (t.key() != key || t.name != name) {
    throw_bad_input("record.target: key '" + key + "' and name '" + name +
                    "' do not match the description (its key is " + t.key() + ", name '" + t.name + "'; edited?)");
  }
}

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string format_time_ms(std::int64_t ms) {
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

std::int64_t parse_time_ms(const std::string& text, const std::string& what) {
  const auto bad = [&] {
    throw_bad_input(what +
                    ": expected an ISO 8601 UTC time (2026-11-29 or 2026-11-29T14:20:00Z) "
                    "or unix seconds, got '" +
                    text + "'");
  };
  if (text.empty()) bad();
  bool digits = true;
  for (char c : text) digits = digits && std::isdigit(static_cast<unsigned char>(c)) != 0;
  if (digits) {
    if (text.size() > 12) bad();
    return std::stoll(text) * 1000;
  }
  std::tm tm{};
  int ms = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &consumed) != 3 ||
      consumed != 10) {
    bad();
  }
  std::string rest = text.substr(10);
  if (!rest.empty()) {
    int n = 0;
    if ((rest[0] != 'T' && rest[0] != ' ') ||
        std::sscanf(rest.c_str() + 1, "%2d:%2d:%2d%n", &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 3) {
      bad();
    }
    rest = rest.substr(1 + static_cast<std::size_t>(n));
    if (!rest.empty() && rest[0] == '.') {
      int m = 0;
      if (std::sscanf(rest.c_str() + 1, "%3d%n", &ms, &m) != 1) bad();
      for (int i = m; i < 3; ++i) ms *= 10;
      rest = rest.substr(1 + static_cast<std::size_t>(m));
    }
    if (rest == "Z") rest.clear();
    if (!rest.empty()) bad();
  }
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60) {
    bad();
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<std::int64_t>(timegm(&tm)) * 1000 + ms;
}

Json Record::to_json() const {
  return Json{{"format", kRecordFormat},
              {"format_version", kRecordFormatVersion},
              {"workload", workload.to_json()},
              {"workload_key", workload.key()},
              {"target", {{"key", target.key}, {"name", target.name}, {"description", target.description}}},
              {"schedule", schedule.to_json()},
              {"schedule_key", schedule.key()},
              {"measurement", measurement.to_json()},
              {"worker", worker},
              {"job", job},
              {"tool_version", tool_version},
              {"created_at_ms", created_at_ms},
              {"created_at", format_time_ms(created_at_ms)}};
}

namespace {

std::string optional_string(const Json& j, const char* name) {
  if (!j.contains(name)) return {};
  if (!j[name].is_string()) throw_bad_input(std::string("record: field '") + name + "' must be a string");
  return j[name].get<std::string>();
}

TargetInfo target_from_json(const Json& j) {
  const Json& t = require_field(j, "target", "record");
  require_object(t, "record: field 'target'");
  TargetInfo info;
  info.key = require_string(t, "key", "record.target");
  info.name = require_string(t, "name", "record.target");
  info.description = require_field(t, "description", "record.target");
  if (info.key.empty()) throw_bad_input("record.target: field 'key' must not be empty");
  if (!info.description.is_object()) throw_bad_input("record.target: field 'description' must be an object");
  return info;
}

}  // namespace

Record Record::from_json(const Json& j) {
  require_object(j, "record");
  const std::string format = require_string(j, "format", "record");
  if (format != kRecordFormat) {
    throw_bad_input("record: field 'format' must be '" + std::string(kRecordFormat) + "', got '" + format + "'");
  }
  const auto version = require_int(j, "format_version", "record");
  if (version < 1 || version > kRecordFormatVersion) {
    throw_bad_input("record: format_version " + std::to_string(version) + " is not supported by this build (reads 1.." +
                    std::to_string(kRecordFormatVersion) + ")");
  }
  Record r;
  r.workload = Workload::from_json(require_field(j, "workload", "record"));
  if (j.contains("workload_key") && j["workload_key"] != r.workload.key()) {
    throw_bad_input(
        "record: field 'workload_key' does not match the workload (edited, or written by "
        "an incompatible version)");
  }
  r.target = target_from_json(j);
  r.schedule = Schedule::from_json(require_field(j, "schedule", "record"));
  r.measurement = Measurement::from_json(require_field(j, "measurement", "record"));
  if (is_infrastructure_error(r.measurement.status)) {
    throw_bad_input("record: status '" + std::string(to_string(r.measurement.status)) +
                    "' is an infrastructure error, not a result of the schedule; it cannot be stored");
  }
  r.worker = optional_string(j, "worker");
  r.job = optional_string(j, "job");
  r.tool_version = optional_string(j, "tool_version");
  if (j.contains("created_at_ms")) r.created_at_ms = require_int(j, "created_at_ms", "record");
  return r;
}

Json MergeReport::to_json() const {
  return Json{{"added", added},         {"identical", identical}, {"combined", combined},
              {"conflicts", conflicts}, {"models", models},       {"jobs", jobs}};
}

}  // namespace atvoss::db
