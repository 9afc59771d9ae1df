#include "core/json.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unordered_set>
#include <vector>

#include "core/error.hpp"
#include "core/user_paths.hpp"

namespace atvoss {

namespace {

// Nesting beyond this is refused before it is built: destroying a deeper value recurses
// once per level, and no input of atvoss nests more than a handful.
constexpr int kMaxJsonDepth = 256;

// Builds the document as nlohmann's own DOM parser does, and refuses what it would
// silently accept: a key repeated in one object (the last one would win unnoticed) and
// nesting beyond kMaxJsonDepth. It also notes the last key read into *last_key, so that an
// error in a value (a number beyond double) can name its field.
// (Not nlohmann's callback parser: at the end of every object it scans the whole enclosing
// object for discarded values, which is quadratic in a recorded table's thousands of rows.)
class StrictDomParser : public nlohmann::detail::json_sax_dom_parser<Json> {
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;

 public:
  StrictDomParser(Json& root, std::string_view what, std::string* last_key)
      : Base(root), what_(what), last_key_(last_key) {}
  bool start_object(std::size_t len) {
    enter();
    keys_.emplace_back();
    return Base::start_object(len);
  }
  bool end_object() {
    --depth_;
    keys_.pop_back();
    return Base::end_object();
  }
  bool start_array(std::size_t len) {
    enter();
    return Base::start_array(len);
  }
  bool end_array() {
    --depth_;
    return Base::end_array();
  }
  bool key(std::string& key) {
    *last_key_ = key;
    if (!keys_.back().insert(key).second) fail("key '" + key + "' appears twice in one object");
    return Base::key(key);
  }

 private:
  // Checked before the container is built: the depth counts the containers around it.
  void enter() {
    if (depth_ >= kMaxJsonDepth) fail("nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    ++depth_;
  }
  [[noreturn]] void fail(const std::string& why) const { throw_bad_input(std::string(what_) + ": " + why); }
  std::string what_;
  std::string* last_key_;
  int depth_ = 0;
  std::vector<std::unordered_set<std::string>> keys_;
};

std::string after_field(const std::string& key) { return key.empty() ? "" : " (after field '" + key + "')"; }

}  // namespace

Json parse_json(std::string_view text, std::string_view what) {
  std::string last_key;
  try {
    Json root;
    StrictDomParser parser(root, what, &last_key);
    Json::sax_parse(text.begin(), text.end(), &parser);
    return root;
  } catch (const Json::parse_error& e) {
    throw Error(ErrorKind::bad_input, std::string(what) + ": invalid JSON at byte " + std::to_string(e.byte) +
                                          after_field(last_key) + ": " + e.what());
  } catch (const Json::exception& e) {
    // Well-formed text nlohmann still cannot hold, e.g. a number beyond double (1e400).
    const std::string field = last_key.empty() ? "" : " in field '" + last_key + "'";
    throw Error(ErrorKind::bad_input, std::string(what) + field + ": " + e.what());
  }
}

Json load_json_file(const std::string& path, std::string_view what) {
  require_input_file(path, what);
  return parse_json(read_input_file(path, what), path);
}

Json json_from_arg(const std::string& arg, std::string_view what) {
  const auto first = arg.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (arg[first] == '{' || arg[first] == '[')) {
    return parse_json(arg, what);
  }
  return load_json_file(arg, what);
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
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(fnv1a64(canonical_dump(j))));
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
    throw_bad_input(std::string(context) + ": field '" + std::string(name) + "' must be an integer, got " + v.dump());
  }
  return integer_as<std::int64_t>(v, name, context);
}

namespace detail {
void throw_integer_range(const Json& v, std::string_view name, std::string_view context, const std::string& lo,
                         const std::string& hi) {
  throw_bad_input(std::string(context) + ": field '" + std::string(name) + "' must be an integer in " + lo + ".." + hi +
                  ", got " + v.dump());
}
}  // namespace detail

double require_number(const Json& obj, std::string_view name, std::string_view context) {
  const Json& v = require_field(obj, name, context);
  if (!v.is_number()) {
    throw_bad_input(std::string(context) + ": field '" + std::string(name) + "' must be a number, got " + v.dump());
  }
  return v.get<double>();
}

std::string require_string(const Json& obj, std::string_view name, std::string_view context) {
  const Json& v = require_field(obj, name, context);
  if (!v.is_string()) {
    throw_bad_input(std::string(context) + ": field '" + std::string(name) + "' must be a string, got " + v.dump());
  }
  return v.get<std::string>();
}

}  // namespace atvoss
