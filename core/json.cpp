#include "core/json.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace atvoss {

Json parse_json(std::string_view text, std::string_view what) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    throw Error(ErrorKind::bad_input,
                std::string(what) + ": invalid JSON at byte " + std::to_string(e.byte) + ": " +
                    e.what());
  }
}

Json load_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::bad_input, path + ": cannot open file");
  std::ostringstream buf;
  buf << in.rdbuf();
  return parse_json(buf.str(), path);
}

Json json_from_arg(const std::string& arg, std::string_view what) {
  const auto first = arg.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (arg[first] == '{' || arg[first] == '[')) {
    return parse_json(arg, what);
  }
  return load_json_file(arg);
}

std::string canonical_dump(const Json& j) { return j.dump(); }

std::uint64_t fnv1a64(std::string_view bytes) noexcept {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string stable_key(const Json& j) {
  char out[17];
  std::snprintf(out, sizeof out, "%016llx",
                static_cast<unsigned long long>(fnv1a64(canonical_dump(j))));
  return out;
}

void require_object(const Json& j, std::string_view context) {
  if (!j.is_object()) {
    throw_bad_input(std::string(context) + ": expected a JSON object, got " + j.type_name());
  }
}

const Json& require_field(const Json& obj, std::string_view name, std::string_view context) {
  require_object(obj, context);
  auto it = obj.find(name);
  if (it == obj.end()) {
    throw_bad_input(std::string(context) + ": missing field '" + std::string(name) + "'");
  }
  return *it;
}

std::int64_t require_int(const Json& obj, std::string_view name, std::string_view context) {
  const Json& v = require_field(obj, name, context);
  if (!v.is_number_integer()) {
    throw_bad_input(std::string(context) + ": field '" + std::string(name) +
                    "' must be an integer, got " + v.dump());
  }
  return v.get<std::int64_t>();
}

double require_number(const Json& obj, std::string_view name, std::string_view context) {
  const Json& v = require_field(obj, name, context);
  if (!v.is_number()) {
    throw_bad_input(std::string(context) + ": field '" + std::string(name) +
                    "' must be a number, got " + v.dump());
  }
  return v.get<double>();
}

std::string require_string(const Json& obj, std::string_view name, std::string_view context) {
  const Json& v = require_field(obj, name, context);
  if (!v.is_string()) {
    throw_bad_input(std::string(context) + ": field '" + std::string(name) +
                    "' must be a string, got " + v.dump());
  }
  return v.get<std::string>();
}

}  // namespace atvoss
