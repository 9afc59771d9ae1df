// /metrics output read back by a strict parser of the Prometheus text format (0.0.4), the
// way a scraper would: HELP and TYPE on every family, TYPE before samples, families not
// interleaved, no duplicate series, valid names, escapes and values; summaries with
// quantiles, _sum and _count; base units (seconds); successes not counted as errors.
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rpc/coordinator.hpp"
#include "rpc/log.hpp"
#include "rpc/metrics.hpp"

namespace atvoss::rpc {
namespace {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
struct Family {
  std::string help, type;
  std::vector<Sample> samples;
};
using Exposition = std::map<std::string, Family>;

bool valid_name(std::string_view n, bool metric) {
  if (n.empty()) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (metric && c == ':');
    if (!alpha && !(i > 0 && std::isdigit(static_cast<unsigned char>(c)))) return false;
  }
  return metric || n.substr(0, 2) != "__";
}

double parse_value(const std::string& v) {
  if (v == "+Inf") return INFINITY;
  if (v == "-Inf") return -INFINITY;
  if (v == "NaN") return NAN;
  std::size_t used = 0;
  const double d = std::stod(v, &used);
  if (used != v.size()) throw std::runtime_error("bad value '" + v + "'");
  return d;
}

// The family a sample belongs to: summary and histogram samples carry suffixes.
std::string family_of(const std::string& name, const Exposition& families) {
  for (const char* suffix : {"_sum", "_count", "_bucket"}) {
    const std::string s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const std::string base = name.substr(0, name.size() - s.size());
      const auto it = families.find(base);
      if (it != families.end() && (it->second.type == "summary" || it->second.type == "histogram")) return base;
    }
  }
  return name;
}

Sample parse_sample(const std::string& line) {
  Sample s;
  std::size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
  s.name = line.substr(0, i);
  if (!valid_name(s.name, true)) throw std::runtime_error("bad metric name");
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      const std::size_t eq = line.find('=', i);
      if (eq == std::string::npos) throw std::runtime_error("label without '='");
      const std::string label = line.substr(i, eq - i);
      if (!valid_name(label, false)) throw std::runtime_error("bad label name '" + label + "'");
      if (eq + 1 >= line.size() || line[eq + 1] != '"') throw std::runtime_error("label value not quoted");
      std::string value;
      std::size_t k = eq + 2;
      for (; k < line.size() && line[k] != '"'; ++k) {
        if (line[k] == '\\') {
          ++k;
          if (k >= line.size()) throw std::runtime_error("escape at end of line");
          if (line[k] == 'n')
            value += '\n';
          else if (line[k] == '\\' || line[k] == '"')
            value += line[k];
          else
            throw std::runtime_error("bad escape in a label value");
        } else {
          value += line[k];
        }
      }
      if (k >= line.size()) throw std::runtime_error("unterminated label value");
      if (!s.labels.emplace(label, value).second) throw std::runtime_error("label repeated");
      i = k + 1;
      if (i < line.size() && line[i] == ',') ++i;
    }
    if (i >= line.size()) throw std::runtime_error("unterminated label set");
    ++i;
  }
  if (i >= line.size() || line[i] != ' ') throw std::runtime_error("no space before the value");
  std::istringstream rest(line.substr(i + 1));
  std::string value, timestamp, extra;
  rest >> value >> timestamp >> extra;
  if (value.empty() || !extra.empty()) throw std::runtime_error("expected a value and an optional timestamp");
  s.value = parse_value(value);
  return s;
}

// Throws std::runtime_error("line N: ...") at the first violation of the format.
Exposition parse_exposition(const std::string& text) {
  if (!text.empty() && text.back() != '\n') throw std::runtime_error("text does not end with a newline");
  Exposition families;
  std::set<std::string> closed;  // families whose group of lines has ended
  std::set<std::string> series;
  std::string current;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    try {
      if (line.empty()) continue;
      std::string name;
      if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
        const std::string rest = line.substr(7);
        const std::size_t sp = rest.find(' ');
        name = rest.substr(0, sp);
        if (!valid_name(name, true) || sp == std::string::npos) throw std::runtime_error("bad HELP/TYPE line");
        Family& f = families[name];
        if (line[2] == 'H') {
          if (!f.help.empty()) throw std::runtime_error("second HELP for " + name);
          f.help = rest.substr(sp + 1);
          if (f.help.empty()) throw std::runtime_error("empty HELP for " + name);
        } else {
          if (!f.type.empty()) throw std::runtime_error("second TYPE for " + name);
          if (!f.samples.empty()) throw std::runtime_error("TYPE after samples of " + name);
          f.type = rest.substr(sp + 1);
          static const std::set<std::string> kTypes{"counter", "gauge", "summary", "histogram", "untyped"};
          if (!kTypes.count(f.type)) throw std::runtime_error("unknown type " + f.type);
        }
      } else if (line[0] == '#') {
        continue;  // a plain comment
      } else {
        Sample s = parse_sample(line);
        name = family_of(s.name, families);
        std::string key = s.name;
        for (const auto& [k, v] : s.labels) key += "|" + k + "=" + v;
        if (!series.insert(key).second) throw std::runtime_error("duplicate series " + key);
        families[name].samples.push_back(std::move(s));
      }
      if (name != current) {
        if (closed.count(name)) throw std::runtime_error("lines of " + name + " are not one group");
        if (!current.empty()) closed.insert(current);
        current = name;
      }
    } catch (const std::exception& e) {
      throw std::runtime_error("line " + std::to_string(n) + ": " + e.what() + ": " + line);
    }
  }
  return families;
}

// What the project asks of every exposition beyond the format itself.
void expect_well_formed(const Exposition& families) {
  for (const auto& [name, f] : families) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(f.help.empty()) << "no HELP";
    EXPECT_FALSE(f.type.empty()) << "no TYPE";
    EXPECT_EQ(name.find("microseconds"), std::string::npos) << "not a base unit";
    if (f.type == "counter") EXPECT_THAT(name, testing::EndsWith("_total"));
    if (f.type == "summary") {
      std::set<std::string> kinds;
      for (const Sample& s : f.samples)
        kinds.insert(s.labels.count("quantile") ? "quantile" : s.name.substr(name.size()));
      EXPECT_EQ(kinds, (std::set<std::string>{"quantile", "_sum", "_count"}));
    }
  }
}

double value_of(const Exposition& families, const std::string& family, const std::string& sample,
                const std::map<std::string, std::string>& labels = {}) {
  for (const Sample& s : families.at(family).samples) {
    if (s.name == sample && s.labels == labels) return s.value;
  }
  throw std::runtime_error("no sample " + sample);
}

TEST(PrometheusParser, RefusesWhatAScraperWouldRefuse) {
  const struct {
    const char* name;
    const char* text;
  } kBad[] = {
      {"TYPE after samples", "# HELP a_total x\na_total 1\n# TYPE a_total counter\n"},
      {"interleaved families", "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na{x=\"1\"} 2\n"},
      {"bad escape", "# TYPE a gauge\na{x=\"\\t\"} 1\n"},
      {"unquoted label", "# TYPE a gauge\na{x=1} 1\n"},
      {"duplicate series", "# TYPE a gauge\na 1\na 2\n"},
      {"bad value", "# TYPE a gauge\na 1us\n"},
      {"bad name", "# TYPE a gauge\n1a 1\n"},
      {"no final newline", "# TYPE a gauge\na 1"},
  };
  for (const auto& c : kBad) {
    SCOPED_TRACE(c.name);
    EXPECT_THROW(parse_exposition(c.text), std::runtime_error);
  }
  const Exposition ok = parse_exposition("# HELP a A.\n# TYPE a gauge\na{x=\"q\\\"\\n\\\\\"} +Inf 123\n");
  EXPECT_EQ(ok.at("a").samples.at(0).labels.at("x"), "q\"\n\\");
}

TEST(Metrics, ExpositionParsesStrictlyWithSecondsAndHonestErrors) {
  FarmMetrics m;
  for (const char* status : {"ok", "ok", "exact", "nearest", "not_found", "we\"ird\nstatus\\"})
    m.count_measured(status);
  m.count_rejection("busy");
  m.count_submitted();
  for (int i = 0; i < 3; ++i) m.add_latency(1500.0);
  Exposition families;
  ASSERT_NO_THROW(families = parse_exposition(m.prometheus())) << m.prometheus();
  expect_well_formed(families);
  EXPECT_DOUBLE_EQ(
      value_of(families, "atvoss_farm_latency_seconds", "atvoss_farm_latency_seconds", {{"quantile", "0.5"}}), 0.0015);
  EXPECT_DOUBLE_EQ(value_of(families, "atvoss_farm_latency_seconds", "atvoss_farm_latency_seconds_sum"), 0.0045);
  EXPECT_EQ(value_of(families, "atvoss_farm_latency_seconds", "atvoss_farm_latency_seconds_count"), 3);
  // Successful lookups and measurements are not errors; the rest are, and odd labels survive.
  std::set<std::string> error_kinds;
  for (const Sample& s : families.at("atvoss_farm_errors_total").samples) error_kinds.insert(s.labels.at("kind"));
  EXPECT_EQ(error_kinds, (std::set<std::string>{"not_found", "we\"ird\nstatus\\", "rejected_busy"}));
  EXPECT_EQ(value_of(families, "atvoss_farm_measurements_total", "atvoss_farm_measurements_total", {{"status", "ok"}}),
            2);
}

// What `atvoss-db serve` exposes: the answer families under its own prefix, then database
// gauges; together they parse strictly, and none of the farm's queue counters appear.
TEST(Metrics, QueryServerExpositionIsAnswersAndGaugesOnly) {
  FarmMetrics m;
  m.count_measured("exact");
  m.count_measured("not_found");
  m.add_latency(2000.0);
  const std::string text = m.prometheus_answers("atvoss_query", FarmMetrics::kQueryHelp) +
                           prometheus_gauges({{"atvoss_db_records", "Records.", 4092},
                                              {"atvoss_db_last_write_timestamp_seconds", "Last write.", 1.7e9}});
  Exposition families;
  ASSERT_NO_THROW(families = parse_exposition(text)) << text;
  expect_well_formed(families);
  EXPECT_EQ(value_of(families, "atvoss_db_records", "atvoss_db_records"), 4092);
  EXPECT_EQ(
      value_of(families, "atvoss_query_measurements_total", "atvoss_query_measurements_total", {{"status", "exact"}}),
      1);
  EXPECT_DOUBLE_EQ(value_of(families, "atvoss_query_latency_seconds", "atvoss_query_latency_seconds_sum"), 0.002);
  for (const auto& [name, family] : families) EXPECT_EQ(name.rfind("atvoss_farm", 0), std::string::npos) << name;
  EXPECT_EQ(families.count("atvoss_query_submitted_total"), 0u);
  // Its HELP texts speak of lookups, not of the farm's relayed measurements.
  EXPECT_THAT(families.at("atvoss_query_measurements_total").help, testing::HasSubstr("Lookups answered"));
  EXPECT_THAT(families.at("atvoss_query_latency_seconds").help, testing::HasSubstr("of a lookup"));
  for (const auto& [name, family] : families) EXPECT_EQ(family.help.find("relayed"), std::string::npos) << name;
}

TEST(Metrics, StatusLabelsAreBounded) {
  FarmMetrics m;
  for (int i = 0; i < 1000; ++i) m.count_measured("status_" + std::to_string(i));
  const Exposition families = parse_exposition(m.prometheus());
  EXPECT_LE(families.at("atvoss_farm_measurements_total").samples.size(), 33u);
  EXPECT_GT(
      value_of(families, "atvoss_farm_measurements_total", "atvoss_farm_measurements_total", {{"status", "other"}}),
      900);
}

// A worker's status went into /metrics as raw bytes: invalid UTF-8, and a scrape refused.
TEST(Metrics, StatusBytesAreMadePrintable) {
  FarmMetrics m;
  m.count_measured(std::string("bad\xff\xfe\nstatus\x01", 13));
  const std::string text = m.prometheus();
  EXPECT_NE(text.find("status=\"bad??\\nstatus?\""), std::string::npos) << text;
  for (const char c : text) EXPECT_TRUE(c == '\n' || (c >= 0x20 && c <= 0x7e)) << int(static_cast<unsigned char>(c));
  EXPECT_NO_THROW((void)m.to_json().dump());
  (void)parse_exposition(text);
}

TEST(Metrics, CoordinatorExpositionParsesStrictly) {
  set_log_enabled(false);
  CoordinatorOptions o;
  o.port = 0;
  Coordinator farm(o);
  farm.start();
  Exposition families;
  ASSERT_NO_THROW(families = parse_exposition(farm.metrics_text())) << farm.metrics_text();
  expect_well_formed(families);
  for (const char* gauge :
       {"atvoss_farm_workers", "atvoss_farm_slots", "atvoss_farm_slots_busy", "atvoss_farm_queue_depth"}) {
    EXPECT_EQ(families.at(gauge).type, "gauge") << gauge;
  }
}

}  // namespace
}  // namespace atvoss::rpc
