// Reading a hardware description (hardware_description.hpp): Mapping, the Target being built
// with a source note per field and what the description left out, and Node, one JSON object of
// the description at a dotted path that names every field it reads, lists the keys nobody read
// as ignored and the required ones that are absent as missing. hardware_description.cpp reads
// the name, architecture and memory sections through them, hardware_description_intrinsics.cpp
// the intrinsics. Private to simulator/.
#pragma once

#include <cctype>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"
#include "core/target.hpp"
#include "simulator/presets.hpp"

namespace atvoss::simulator::description {

inline std::string label(const std::string& path) { return "hardware description: field '" + path + "'"; }

[[noreturn]] inline void fail(const std::string& path, const std::string& expected, const Json* got = nullptr) {
  throw_bad_input(label(path) + " " + expected + (got ? ", got " + got->dump() : ""));
}

inline std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

inline std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

inline std::string at_index(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

// The part whose figures stand in for those a description may leave out: the ascend910b
// preset, every figure of which is published (docs/hardware-facts.md section 1).
inline const Target& reference() {
  static const Target t = preset("ascend910b");
  return t;
}

// The Target being built, as the JSON Target::from_json reads, with a source note per
// field, and what the description left out.
struct Mapping {
  Json t = Json::object();
  Json source = Json::object();
  std::vector<std::string> ignored;
  std::vector<std::string> missing;   // "'path' is missing" and the like: refused together
  std::set<std::string> hints;        // what was expected, once per kind of missing field
  std::vector<std::string> defaults;  // "field = value" for every figure assumed
  bool short_form = false;            // memory.hierarchy lists level names (the articles' form)
  bool core_type_known = false;
  bool vector_only = false;  // core_type "simd_vector": vector units only, no matrix unit

  void set(const std::string& field, Json v, const std::string& how) {
    t[field] = std::move(v);
    source[field] = how;
  }
  void note(const std::string& field, const std::string& how) { source[field] = how; }
  // A figure the description leaves out: v, noted as an estimate and listed as a default.
  void assume(const std::string& field, Json v, const std::string& why) {
    defaults.push_back(field + " = " + v.dump());
    set(field, std::move(v), "est.: " + why);
  }
};

// v as a number within the bounds of Target field `as`, reported under path.
inline double checked_number(const Json& v, const std::string& path, std::string_view as) {
  if (!v.is_number()) fail(path, "must be a number", &v);
  Target::check_bounds(as, v.get<double>(), v, label(path));
  return v.get<double>();
}

// One JSON object of the description at a dotted path. The keys read through it are
// used; finish() lists the others as ignored. A required key that is absent reads as
// nullopt (or nullptr) and is listed as missing.
class Node {
 public:
  Node(const Json& j, std::string path, Mapping& m) : j_(j), path_(std::move(path)), m_(m) {
    if (!j_.is_object()) fail(path_.empty() ? "(top level)" : path_, "must be an object", &j_);
  }

  // A section that is absent, and already listed as missing: it reads as empty and lists
  // nothing more, so that one missing section is one line of the refusal.
  static Node absent(std::string path, Mapping& m) {
    Node n(empty(), std::move(path), m);
    n.present_ = false;
    return n;
  }

  const std::string& where() const { return path_; }
  std::string path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  bool has(const std::string& key) const { return j_.contains(key); }
  // The value at key without using it; nullptr if absent.
  const Json* peek(const std::string& key) const { return has(key) ? &j_[key] : nullptr; }

  // The value at key, used; nullptr if absent, which is listed as missing (with `why`).
  const Json* find(const std::string& key, const std::string& why = "") {
    if (!has(key)) {
      if (present_) m_.missing.push_back("'" + path(key) + "' is missing" + why);
      return nullptr;
    }
    used_.insert(key);
    return &j_[key];
  }

  std::optional<std::string> string(const std::string& key) {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(path(key), "must be a string", v);
    return v->get<std::string>();
  }

  // A number within the bounds of Target field `as` (check_bounds), reported under our path.
  std::optional<double> number(const std::string& key, std::string_view as) {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    return checked_number(*v, path(key), as);
  }

  std::optional<std::int64_t> integer(const std::string& key, std::string_view as) {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) fail(path(key), "must be an integer", v);
    const double shown = v->is_number_unsigned() && v->get<std::int64_t>() < 0 ? 1e300 : v->get<double>();
    Target::check_bounds(as, shown, *v, label(path(key)));
    return v->get<std::int64_t>();
  }

  Node object(const std::string& key) {
    const Json* v = find(key);
    return v ? Node(*v, path(key), m_) : absent(path(key), m_);
  }

  const Json* array(const std::string& key) {
    const Json* v = find(key);
    if (v && (!v->is_array() || v->empty())) fail(path(key), "must be a non-empty array", v);
    return v;
  }

  void finish() const {
    for (const auto& [k, v] : j_.items()) {
      if (!used_.count(k)) m_.ignored.push_back(path(k));
    }
  }

 private:
  static const Json& empty() {
    static const Json e = Json::object();
    return e;
  }

  const Json& j_;
  std::string path_;
  Mapping& m_;
  std::set<std::string> used_;
  bool present_ = true;
};

// The compute units from the description's intrinsics list (at its path `at`): the matrix unit's
// shape and rates, the vector unit's width, or the vector unit running the matrix work.
void map_intrinsics(const Json& list, const std::string& at, Mapping& m);

}  // namespace atvoss::simulator::description
