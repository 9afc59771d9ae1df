#include "core/kernel_tuner_format.hpp"

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

std::string cache_key(const std::vector<std::int64_t>& values) {
  std::string key;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) key += ',';
    key += std::to_string(values[i]);
  }
  return key;
}

}  // namespace atvoss::kernel_tuner
