#include "db/kernel_tuner_cache.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/gzip_file.hpp"
#include "core/kernel_tuner_format.hpp"
#include "core/recorded_space.hpp"

namespace atvoss::db {
namespace kt = kernel_tuner;
namespace {

// The worker of imported records: how export finds their kernel name again (their job).
constexpr char kImportWorker[] = "kernel_tuner";

// The record a schedule is exported as: its fastest ok one, else its newest failure that
// Kernel Tuner has a tag for (records come oldest first).
const Record* better(const Record* kept, const Record& r) {
  if (r.measurement.ok()) {
    return kept && kept->measurement.ok() && kept->measurement.time_us <= r.measurement.time_us ? kept : &r;
  }
  if (!kt::tag_of(r.measurement.status)) return kept;
  return kept && kept->measurement.ok() ? kept : &r;
}

std::string default_kernel_name(const std::vector<Record>& records) {
  for (const auto& r : records) {
    if (r.worker == kImportWorker && !r.job.empty()) return r.job;
  }
  return records.front().workload.op();
}

// One cache entry: the parameters in key order, then the objective and the timings that
// simulation mode charges. ordered_json keeps that order, as Kernel Tuner writes it.
nlohmann::ordered_json entry_of(const Record& r, const std::vector<std::string>& keys, const kt::Objective& objective) {
  nlohmann::ordered_json e;
  for (const auto& k : keys) e[k] = r.schedule.values().at(k);
  const Measurement& m = r.measurement;
  double benchmark_ms = 0;
  if (m.ok() && !objective.is_time()) {
    e[objective.name] = objective.value_of(m.time_us);  // its time is not known here
  } else if (m.ok()) {
    e[kt::kTime] = m.time_us / kt::kUsPerMs;
    auto times = nlohmann::ordered_json::array();
    for (double us : m.repeats) times.push_back(us / kt::kUsPerMs);
    benchmark_ms = std::accumulate(m.repeats.begin(), m.repeats.end(), 0.0) / kt::kUsPerMs;
    e[kt::kTimes] = std::move(times);
  } else {
    e[kt::kTime] = std::string(*kt::tag_of(m.status));
  }
  e[kt::kCompileTime] = 0.0;
  e[kt::kVerificationTime] = 0.0;
  e[kt::kBenchmarkTime] = benchmark_ms;
  e[kt::kStrategyTime] = 0.0;
  e[kt::kFrameworkTime] = 0.0;
  return e;
}

// Kernel Tuner's own layout: the header fields, one cache entry a line, "cache" last and
// the text ending in "}\n}" (see core/kernel_tuner_format.hpp).
std::string cache_text(const KernelTunerExportReport& report, const std::vector<std::string>& keys,
                       const kt::Objective& objective, const std::vector<const Record*>& rows) {
  nlohmann::ordered_json params;  // each knob's values, in key order
  for (const auto& k : keys) {
    std::set<std::int64_t> values;
    for (const Record* r : rows) values.insert(r->schedule.values().at(k));
    params[k] = values;
  }
  std::ostringstream out;
  out << "{\n\"" << kt::kDeviceName << "\": " << Json(report.device_name).dump() << ",\n\"" << kt::kKernelName
      << "\": " << Json(report.kernel_name).dump() << ",\n\"" << kt::kTuneParamsKeys << "\": " << Json(keys).dump()
      << ",\n\"" << kt::kTuneParams << "\": " << params.dump() << ",\n\"" << kt::kObjective
      << "\": " << Json(objective.name).dump() << ",\n\"";
  if (!objective.is_time()) {  // a time export stays as Kernel Tuner writes one
    out << kt::kObjectiveHigherIsBetter << "\": " << (objective.higher_is_better ? "true" : "false") << ",\n\"";
  }
  out << kt::kCache << "\": {";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::vector<std::int64_t> values;
    for (const auto& k : keys) values.push_back(rows[i]->schedule.values().at(k));
    out << (i ? ",\n" : "\n") << Json(kt::cache_key(values)).dump() << ": "
        << entry_of(*rows[i], keys, objective).dump();
  }
  out << "\n}\n}\n";
  return out.str();
}

// Through a temporary file and a rename, so path is never left half written.
void write_replacing(const std::string& path, const std::string& text, const std::string& what) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
    if (!file || !(file << text) || !file.flush()) throw Error(ErrorKind::io, what + ": cannot write '" + tmp + "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw Error(ErrorKind::io, what + ": cannot write '" + path + "'");
  }
}

// What the export keeps of the cache a recorded workload was imported from, when that file
// is still readable and names the same parameters: its parameter order (Kernel Tuner builds
// its cache keys, "64,2", in tune_params_keys order, so a reordered export would not match
// the user's kernel) and its objective. Otherwise the schedule's own (alphabetical) order
// and time.
struct SourceCache {
  std::vector<std::string> keys;
  kt::Objective objective;
};

SourceCache source_cache(const Workload& w, std::vector<std::string> keys) {
  if (!w.is_recorded()) return {std::move(keys), {}};
  try {
    SourceCache source;
    const auto recorded = RecordedSpace::load(w.table());  // held: knobs() lives in it
    for (const Knob& k : recorded->space().knobs()) source.keys.push_back(k.name);
    source.objective = recorded->objective();
    if (std::is_permutation(source.keys.begin(), source.keys.end(), keys.begin(), keys.end())) return source;
  } catch (const Error&) {
    // The source moved or changed since the import: its order is unknown.
  }
  return {std::move(keys), {}};
}

}  // namespace

bool is_kernel_tuner_cache(const std::string& path) {
  if (!kt::is_cache_file_name(path)) return false;
  if (path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0) return true;
  try {
    return kt::looks_like_cache(Json::parse(read_maybe_gzip(path)));
  } catch (const std::exception&) {
    return false;  // several JSON lines (an export) or not JSON at all
  }
}

std::vector<Record> read_kernel_tuner_cache(const std::string& path) {
  const std::string text = read_maybe_gzip(path);
  const Json doc = parse_json(text, path);
  if (!kt::looks_like_cache(doc)) {
    throw_bad_input(path + ": not a Kernel Tuner cache file (expected an object with '" + kt::kCache + "' and '" +
                    kt::kTuneParamsKeys + "')");
  }
  const std::string device = require_string(doc, kt::kDeviceName, path);
  const std::string kernel = doc.contains(kt::kKernelName) && doc[kt::kKernelName].is_string()
                                 ? doc[kt::kKernelName].get<std::string>()
                                 : std::string();
  const auto space = RecordedSpace::parse(text, path);
  const Workload workload = Workload::from_json(Json{{"op", "recorded"}, {"table", path}});
  const TargetInfo target = TargetInfo::named(device);
  const std::int64_t now = now_ms();
  std::vector<Record> records;
  for (const Schedule& s : space->configurations()) {
    Record r(workload, target, s, space->measure(s));
    r.worker = kImportWorker;
    r.job = kernel;
    r.created_at_ms = now;
    records.push_back(std::move(r));
  }
  return records;
}

Json KernelTunerExportReport::to_json() const {
  return {{"entries", entries},         {"failed", failed},           {"skipped", skipped},
          {"kernel_name", kernel_name}, {"device_name", device_name}, {"path", path}};
}

KernelTunerExportReport write_kernel_tuner_cache(const std::vector<Record>& records, const std::string& path,
                                                 const std::string& kernel_name) {
  const std::string what = "export_kernel_tuner_cache";
  if (!kt::is_cache_file_name(path) || path.compare(path.size() - 5, 5, ".json") != 0) {
    throw_bad_input(what + ": field 'path' must end in .json (Kernel Tuner reads plain JSON), got '" + path + "'");
  }
  if (records.empty()) throw_bad_input(what + ": no records of this workload on this target");
  const Record& first = records.front();
  std::vector<std::string> keys;
  for (const auto& [knob, value] : first.schedule.values()) keys.push_back(knob);
  std::map<std::string, const Record*> chosen;  // by schedule key
  std::vector<std::string> order;               // first seen first, as they were measured
  for (const auto& r : records) {
    if (r.workload.key() != first.workload.key()) {
      throw_bad_input(what + ": field 'workload': records of several workloads");
    }
    if (r.target.key != first.target.key) throw_bad_input(what + ": field 'target': records of several targets");
    if (r.schedule.values().size() != keys.size() ||
        !std::equal(keys.begin(), keys.end(), r.schedule.values().begin(),
                    [](const std::string& k, const auto& kv) { return k == kv.first; })) {
      throw_bad_input(what + ": field 'schedule': records with different knobs (" + r.schedule.to_json().dump() + ")");
    }
    auto [it, fresh] = chosen.emplace(r.schedule.key(), nullptr);
    if (fresh) order.push_back(it->first);
    it->second = better(it->second, r);
  }
  KernelTunerExportReport report;
  report.kernel_name = kernel_name.empty() ? default_kernel_name(records) : kernel_name;
  report.device_name = first.target.name;
  report.path = path;
  std::vector<const Record*> rows;
  for (const auto& k : order) {
    const Record* r = chosen[k];
    if (!r) {
      ++report.skipped;
      continue;
    }
    rows.push_back(r);
    if (!r->measurement.ok()) ++report.failed;
  }
  if (rows.empty()) throw_bad_input(what + ": no record to write: every one is invalid or an infrastructure error");
  report.entries = static_cast<std::int64_t>(rows.size());

  const SourceCache source = source_cache(first.workload, keys);
  write_replacing(path, cache_text(report, source.keys, source.objective, rows), what);
  return report;
}

}  // namespace atvoss::db
