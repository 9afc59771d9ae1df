#include "db/kernel_tuner_cache.hpp"

#include <memory>

#include "core/error.hpp"
#include "core/gzip_file.hpp"
#include "core/recorded_space.hpp"

namespace atvoss::db {
namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool looks_like_cache(const Json& doc) {
  return doc.is_object() && doc.contains("cache") && doc.contains("tune_params_keys");
}

}  // namespace

bool is_kernel_tuner_cache(const std::string& path) {
  if (ends_with(path, ".json.gz")) return true;
  if (!ends_with(path, ".json")) return false;
  try {
    return looks_like_cache(Json::parse(read_maybe_gzip(path)));
  } catch (const std::exception&) {
    return false;  // several JSON lines (an export) or not JSON at all
  }
}

std::vector<Record> read_kernel_tuner_cache(const std::string& path) {
  const std::string text = read_maybe_gzip(path);
  const Json doc = parse_json(text, path);
  if (!looks_like_cache(doc)) {
    throw_bad_input(path + ": not a Kernel Tuner cache file (expected an object with 'cache' and "
                    "'tune_params_keys')");
  }
  const std::string device = require_string(doc, "device_name", path);
  const std::string kernel = doc.contains("kernel_name") && doc["kernel_name"].is_string()
                                 ? doc["kernel_name"].get<std::string>()
                                 : std::string();
  const auto space = RecordedSpace::parse(text, path);
  const Workload workload = Workload::from_json(Json{{"op", "recorded"}, {"table", path}});
  const TargetInfo target = TargetInfo::named(device);
  const std::int64_t now = now_ms();
  std::vector<Record> records;
  for (const Schedule& s : space->configurations()) {
    Record r(workload, target, s, space->measure(s));
    r.worker = "kernel_tuner";
    r.job = kernel;
    r.created_at_ms = now;
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace atvoss::db
