// RecordedSpace: parsing of the two table formats (see recorded_space.hpp) into one
// Table of configurations keyed by their knob values, shared by the space's check.
// Read first: Table, parse_csv, parse_kernel_tuner, RecordedSpace::load.
#include "core/recorded_space.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "core/constraint.hpp"
#include "core/error.hpp"
#include "core/gzip_file.hpp"
#include "core/json.hpp"
#include "core/kernel_tuner_format.hpp"

namespace atvoss {
namespace {

using Values = std::vector<std::int64_t>;  // one value per knob, in knob order

struct ValuesHash {
  std::size_t operator()(const Values& v) const noexcept {
    std::string_view bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(v[0]));
    return static_cast<std::size_t>(fnv1a64(bytes));
  }
};

struct Entry {
  Values values;
  Status status = Status::ok;
  std::string message;
  double time_us = 0;
  std::vector<double> repeats;
};

// Everything parsed from a file. Shared (not copied) by the space's check, so a copy of
// space() stays usable after the RecordedSpace is gone.
struct Table {
  kernel_tuner::Objective objective;  // time for CSV tables
  std::vector<Knob> knobs;
  std::vector<Entry> entries;  // file order
  std::unordered_map<Values, std::size_t, ValuesHash> index;

  // Values of s in knob order; nullopt if s lacks a knob.
  std::optional<Values> values_of(const Schedule& s) const {
    Values v(knobs.size());
    for (std::size_t d = 0; d < knobs.size(); ++d) {
      auto it = s.values().find(knobs[d].name);
      if (it == s.values().end()) return std::nullopt;
      v[d] = it->second;
    }
    return v;
  }
  const Entry* find(const Schedule& s) const {
    if (s.values().size() != knobs.size()) return nullptr;
    auto v = values_of(s);
    if (!v) return nullptr;
    auto it = index.find(*v);
    return it == index.end() ? nullptr : &entries[it->second];
  }
  void add(Entry e, const std::string& where) {
    auto [it, fresh] = index.emplace(e.values, entries.size());
    if (!fresh) throw_bad_input(where + ": duplicate configuration");
    entries.push_back(std::move(e));
  }
};

// ---- CSV -------------------------------------------------------------------------

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) {
    while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\r')) cell.pop_back();
    cell.erase(0, cell.find_first_not_of(' '));
    cells.push_back(cell);
  }
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

std::int64_t parse_int_cell(const std::string& cell, const std::string& where) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (ec != std::errc() || end != cell.data() + cell.size()) {
    throw_bad_input(where + " must be an integer, got '" + cell + "'");
  }
  return v;
}

double parse_time_cell(const std::string& cell, const std::string& where) {
  try {
    std::size_t used = 0;
    const double v = std::stod(cell, &used);
    if (used == cell.size() && std::isfinite(v) && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw_bad_input(where + " must be a number > 0 for status ok, got '" + cell + "'");
}

std::vector<std::string> read_csv_header(std::istringstream& in, const std::string& name) {
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \r") == std::string::npos) continue;
    auto header = split_csv_line(line);
    const auto n = header.size();
    if (n < 3 || header[n - 2] != "time_us" || header[n - 1] != "status") {
      throw_bad_input(name + ": line 1: header must be knob columns then time_us,status; got '" + line + "'");
    }
    return header;
  }
  throw_bad_input(name + ": empty CSV; expected a header row of knob names, time_us, status");
}

Table parse_csv(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  const auto header = read_csv_header(in, name);
  const std::size_t knobs = header.size() - 2;
  Table t;
  std::vector<std::vector<std::int64_t>> seen(knobs);
  std::string line;
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \r") == std::string::npos) continue;
    const std::string where = name + ": line " + std::to_string(line_no);
    auto cells = split_csv_line(line);
    if (cells.size() != header.size()) {
      throw_bad_input(where + ": expected " + std::to_string(header.size()) + " columns, got " +
                      std::to_string(cells.size()));
    }
    Entry e;
    for (std::size_t d = 0; d < knobs; ++d) {
      e.values.push_back(parse_int_cell(cells[d], where + ": column '" + header[d] + "'"));
      seen[d].push_back(e.values.back());
    }
    e.status = parse_status(cells[knobs + 1]);
    if (is_infrastructure_error(e.status)) {
      throw_bad_input(where + ": status '" + cells[knobs + 1] +
                      "' is an infrastructure error, not a result; expected ok or a candidate error");
    }
    if (e.status == Status::ok) {
      e.time_us = parse_time_cell(cells[knobs], where + ": column 'time_us'");
      e.repeats = {e.time_us};
    } else {
      e.message = "recorded as " + cells[knobs + 1];
    }
    t.add(std::move(e), where);
  }
  for (std::size_t d = 0; d < knobs; ++d) {
    auto& v = seen[d];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    if (v.empty()) throw_bad_input(name + ": no configurations after the header");
    t.knobs.push_back({header[d], v});
  }
  return t;
}

// ---- Kernel Tuner cache (names and tags: core/kernel_tuner_format.hpp) --------------

namespace kt = kernel_tuner;

// How one parameter's JSON values become integers (see the header).
struct ParamMap {
  std::string name;
  Json domain;         // the tune_params list
  bool as_is = false;  // all integers: use the values themselves
};

ParamMap map_param(const Json& doc, const std::string& name, const std::string& file) {
  const Json& params = require_field(doc, kt::kTuneParams, file);
  if (!params.is_object()) throw_bad_input(file + ": field '" + kt::kTuneParams + "' must be an object");
  auto it = params.find(name);
  if (it == params.end() || !it->is_array() || it->empty()) {
    throw_bad_input(file + ": " + kt::kTuneParams + "['" + name + "'] must be a non-empty list of values");
  }
  ParamMap m{name, *it, true};
  for (const auto& v : *it) m.as_is = m.as_is && v.is_number_integer();
  return m;
}

Knob knob_of(const ParamMap& m) {
  Knob k{m.name, {}};
  for (std::size_t i = 0; i < m.domain.size(); ++i) {
    k.values.push_back(m.as_is ? m.domain[i].get<std::int64_t>() : static_cast<std::int64_t>(i));
  }
  std::sort(k.values.begin(), k.values.end());
  k.values.erase(std::unique(k.values.begin(), k.values.end()), k.values.end());
  return k;
}

std::int64_t map_value(const ParamMap& m, const Json& v, const std::string& where) {
  for (std::size_t i = 0; i < m.domain.size(); ++i) {
    if (m.domain[i] == v) return m.as_is ? v.get<std::int64_t>() : static_cast<std::int64_t>(i);
  }
  throw_bad_input(where + ": parameter '" + m.name + "' = " + v.dump() + " is not in its " + kt::kTuneParams + " list");
}

std::vector<double> ms_list_to_us(const Json& times, const std::string& where) {
  std::vector<double> out;
  const std::string bad = where + ": field '" + kt::kTimes + "' must be a list of numbers";
  if (!times.is_array()) throw_bad_input(bad);
  for (const auto& t : times) {
    if (!t.is_number()) throw_bad_input(bad);
    out.push_back(t.get<double>() * kt::kUsPerMs);
  }
  return out;
}

// The cost of an ok entry whose objective is not time (kernel_tuner::Objective).
double objective_cost(const Json& rec, const kernel_tuner::Objective& o, const std::string& where) {
  const Json& v = require_field(rec, o.name, where);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0) {
    throw_bad_input(where + ": field '" + o.name + "' (the objective) must be a number > 0, got " + v.dump());
  }
  return o.cost_of(v.get<double>());
}

Entry kernel_tuner_entry(const Json& rec, const std::vector<ParamMap>& params, const kernel_tuner::Objective& objective,
                         const std::string& where) {
  if (!rec.is_object()) throw_bad_input(where + ": must be an object");
  Entry e;
  for (const auto& p : params) e.values.push_back(map_value(p, require_field(rec, p.name, where), where));
  // A failure is tagged in "time" whatever the objective; another objective's entries need
  // no time (an export writes none: it is not known).
  const auto tagged = rec.find(kt::kTime);
  if (tagged != rec.end() && tagged->is_string()) {
    const auto tag = tagged->get<std::string>();
    e.status = kt::status_of_tag(tag);
    e.message = "recorded as " + tag;
    return e;
  }
  if (!objective.is_time()) {
    e.time_us = objective_cost(rec, objective, where);
    e.repeats = {e.time_us};
    return e;
  }
  const Json& time = require_field(rec, kt::kTime, where);
  if (time.is_number() && std::isfinite(time.get<double>()) && time.get<double>() > 0) {
    e.time_us = time.get<double>() * kt::kUsPerMs;
    auto it = rec.find(kt::kTimes);
    e.repeats = it != rec.end() ? ms_list_to_us(*it, where) : std::vector<double>{};
    // "times" become the repeats only where they bracket "time". Where "time" was measured
    // apart from them (on the host, in the pnpoly and convolution RTX 3090 caches), they
    // are not its repeats, and "time" is the objective (data/recorded-spaces/README.md).
    const auto [lo, hi] = std::minmax_element(e.repeats.begin(), e.repeats.end());
    if (e.repeats.empty() || e.time_us < *lo || e.time_us > *hi) e.repeats = {e.time_us};
  } else {
    throw_bad_input(where + ": field '" + kt::kTime + "' must be a number > 0 (ms) or a failure tag, got " +
                    time.dump());
  }
  return e;
}

// The cache's restrictions (kernel_tuner::kRestrictions), parsed over its parameter names.
std::vector<Constraint> restrictions_of(const Json& doc, const std::vector<ParamMap>& params, const std::string& file) {
  std::vector<Constraint> out;
  const auto it = doc.find(kt::kRestrictions);
  if (it == doc.end()) return out;
  const std::string bad = file + ": field '" + kt::kRestrictions + "' must be a list of expressions (strings)";
  if (!it->is_array()) throw_bad_input(bad);
  std::vector<std::string> names;
  for (const auto& p : params) names.push_back(p.name);
  for (std::size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string()) throw_bad_input(bad);
    try {
      out.push_back(Constraint::parse((*it)[i].get<std::string>(), names));
    } catch (const Error& e) {
      throw_bad_input(file + ": " + kt::kRestrictions + "[" + std::to_string(i) + "]: " + e.what());
    }
  }
  return out;
}

// Whether a cache entry satisfies every restriction, on its recorded values.
bool satisfies(const Json& rec, const std::vector<ParamMap>& params, const std::vector<Constraint>& restrictions,
               const std::string& where) {
  if (restrictions.empty()) return true;
  std::vector<ConstraintValue> values;
  for (const auto& p : params) {
    const Json& v = require_field(rec, p.name, where);
    if (v.is_string()) {
      values.emplace_back(v.get<std::string>());
    } else if (v.is_number() || v.is_boolean()) {
      values.emplace_back(v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>());
    } else {
      values.emplace_back(v.dump());
    }
  }
  return std::all_of(restrictions.begin(), restrictions.end(), [&](const Constraint& c) { return c.holds(values); });
}

Table parse_kernel_tuner(const std::string& text, const std::string& name) {
  const Json doc = parse_json(text, name);
  require_object(doc, name);
  const Json& keys = require_field(doc, kt::kTuneParamsKeys, name);
  const std::string bad_keys = name + ": field '" + kt::kTuneParamsKeys + "' must be a non-empty list of names";
  if (!keys.is_array() || keys.empty()) throw_bad_input(bad_keys);
  Table t;
  t.objective = kt::objective_of(doc, name);
  std::vector<ParamMap> params;
  for (const auto& k : keys) {
    if (!k.is_string()) throw_bad_input(bad_keys);
    params.push_back(map_param(doc, k.get<std::string>(), name));
    t.knobs.push_back(knob_of(params.back()));
  }
  const std::vector<Constraint> restrictions = restrictions_of(doc, params, name);
  const Json& cache = require_field(doc, kt::kCache, name);
  if (!cache.is_object()) throw_bad_input(name + ": field '" + kt::kCache + "' must be an object");
  for (const auto& [key, rec] : cache.items()) {
    const std::string where = name + ": " + kt::kCache + "['" + key + "']";
    if (!rec.is_object()) throw_bad_input(where + ": must be an object");
    if (!satisfies(rec, params, restrictions, where)) continue;  // never a configuration of the space
    t.add(kernel_tuner_entry(rec, params, t.objective, where), where);
  }
  return t;
}

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::weak_ptr<const RecordedSpace>>& load_cache() {
  static std::map<std::string, std::weak_ptr<const RecordedSpace>> c;
  return c;
}

}  // namespace

struct RecordedSpace::Impl {
  std::shared_ptr<const Table> table;
  ScheduleSpace space;
  std::optional<double> optimum_us;
  std::size_t failed = 0;
  std::string source;
};

RecordedSpace::RecordedSpace(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RecordedSpace::~RecordedSpace() = default;

std::shared_ptr<const RecordedSpace> RecordedSpace::parse(const std::string& text, const std::string& name) {
  auto table = std::make_shared<const Table>(kernel_tuner::is_cache_file_name(name) ? parse_kernel_tuner(text, name)
                                                                                    : parse_csv(text, name));
  auto impl = std::make_unique<Impl>();
  impl->source = name;
  for (const auto& e : table->entries) {
    if (e.status != Status::ok) {
      ++impl->failed;
    } else if (!impl->optimum_us || e.time_us < *impl->optimum_us) {
      impl->optimum_us = e.time_us;
    }
  }
  impl->space = ScheduleSpace(table->knobs, [table](const Schedule& s) {
    return table->find(s) ? Verdict::valid()
                          : Verdict::invalid(
                                "configuration is not in the recorded table "
                                "(it breaks the kernel's restrictions)");
  });
  impl->table = std::move(table);
  return std::shared_ptr<const RecordedSpace>(new RecordedSpace(std::move(impl)));
}

std::shared_ptr<const RecordedSpace> RecordedSpace::load(const std::string& path) {
  std::lock_guard lock(cache_mutex());
  auto& slot = load_cache()[path];
  if (auto cached = slot.lock()) return cached;
  auto loaded = parse(read_maybe_gzip(path), path);
  slot = loaded;
  return loaded;
}

const ScheduleSpace& RecordedSpace::space() const { return impl_->space; }

Measurement RecordedSpace::measure(const Schedule& schedule) const {
  const Entry* e = impl_->table->find(schedule);
  if (!e) {
    const Verdict v = impl_->space.check(schedule);
    return Measurement::failed(Status::invalid, v.ok ? "not in the recorded table" : v.reason);
  }
  if (e->status != Status::ok) return Measurement::failed(e->status, e->message);
  Measurement m;
  m.time_us = e->time_us;
  m.repeats = e->repeats;
  return m;
}

std::optional<double> RecordedSpace::optimum_us() const { return impl_->optimum_us; }

std::vector<Schedule> RecordedSpace::configurations() const {
  std::vector<Schedule> out;
  out.reserve(impl_->table->entries.size());
  const auto& knobs = impl_->table->knobs;
  for (const auto& e : impl_->table->entries) {
    std::map<std::string, std::int64_t> v;
    for (std::size_t d = 0; d < knobs.size(); ++d) v[knobs[d].name] = e.values[d];
    out.emplace_back(std::move(v));
  }
  return out;
}

std::size_t RecordedSpace::recorded_count() const { return impl_->table->entries.size(); }
std::size_t RecordedSpace::failed_count() const { return impl_->failed; }
const std::string& RecordedSpace::source() const { return impl_->source; }
const kernel_tuner::Objective& RecordedSpace::objective() const { return impl_->table->objective; }

}  // namespace atvoss
