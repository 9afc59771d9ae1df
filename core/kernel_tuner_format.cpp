#include "core/kernel_tuner_format.hpp"

#include "core/error.hpp"

namespace atvoss::kernel_tuner {
namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool is_cache_file_name(const std::string& path) { return ends_with(path, ".json") || ends_with(path, ".json.gz"); }

bool looks_like_cache(const Json& doc) {
  return doc.is_object() && doc.contains(kCache) && doc.contains(kTuneParamsKeys);
}

Status status_of_tag(std::string_view tag) {
  return tag == kCompilationFailed ? Status::compile_error : Status::runtime_error;
}

std::optional<std::string_view> tag_of(Status status) {
  switch (status) {
    case Status::compile_error:
      return kCompilationFailed;
    case Status::runtime_error:
    case Status::wrong_answer:
    case Status::timeout:
      return kRuntimeFailed;
    default:
      return std::nullopt;
  }
}

Json Objective::to_json() const { return {{kObjective, name}, {kObjectiveHigherIsBetter, higher_is_better}}; }

Objective objective_of(const Json& doc, const std::string& where) {
  Objective o;
  if (auto it = doc.find(kObjective); it != doc.end()) {
    if (!it->is_string() || it->get<std::string>().empty()) {
      throw_bad_input(where + ": field '" + kObjective + "' must be a non-empty string, got " + it->dump());
    }
    o.name = it->get<std::string>();
  }
  const auto flag = doc.find(kObjectiveHigherIsBetter);
  if (flag != doc.end() && !flag->is_boolean()) {
    throw_bad_input(where + ": field '" + kObjectiveHigherIsBetter + "' must be true or false, got " + flag->dump());
  }
  if (flag == doc.end() && !o.is_time()) {
    throw_bad_input(where + ": field '" + kObjectiveHigherIsBetter + "' is missing: the objective is '" + o.name +
                    "', not time, so say whether higher is better (true for a throughput such as GFLOP/s)");
  }
  o.higher_is_better = flag != doc.end() && flag->get<bool>();
  if (o.is_time() && o.higher_is_better) {
    throw_bad_input(where + ": field '" + kObjectiveHigherIsBetter + "' is true, but the objective is time");
  }
  return o;
}

std::string cache_key(const std::vector<std::int64_t>& values) {
  std::string key;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) key += ',';
    key += std::to_string(values[i]);
  }
  return key;
}

}  // namespace atvoss::kernel_tuner
