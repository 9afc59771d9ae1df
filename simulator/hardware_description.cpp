// Map: target_from_description() finds the memory section (beside or under
// architecture) and its form (short: level names; full: level objects), then reads the
// three sections in turn (map_architecture, map_memory, map_intrinsics) through Node,
// which names every field by its dotted path, collects the keys nobody read as
// "ignored" and the required ones that are absent as "missing". refuse_missing() names
// all of those in one bad_input at the end, so a user fixes a description in one go.
// A figure the description may leave out takes the reference part's (reference()),
// noted "est." in source and listed in source["defaults"]. Every mapped number passes
// Target::check_bounds under its own path, so the description's limits are the
// Target's documented ones (examples/targets/README.md).
#include "simulator/hardware_description.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "simulator/presets.hpp"

namespace atvoss::simulator {
namespace {

std::string label(const std::string& path) { return "hardware description: field '" + path + "'"; }

[[noreturn]] void fail(const std::string& path, const std::string& expected, const Json* got = nullptr) {
  throw_bad_input(label(path) + " " + expected + (got ? ", got " + got->dump() : ""));
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string at_index(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

// The part whose figures stand in for those a description may leave out: the ascend910b
// preset, every figure of which is published (docs/hardware-facts.md section 1).
const Target& reference() {
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
double checked_number(const Json& v, const std::string& path, std::string_view as) {
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

// A name is no figure: a description without one gets "described-" and its content
// hash, which the same description always gets and two different ones do not share.
void map_name(Node& root, const Json& j, Mapping& m) {
  if (!root.has("name")) {
    const std::string name = "described-" + stable_key(j).substr(0, 8);
    m.defaults.push_back("name = \"" + name + "\"");
    m.set("name", name, "no name given: \"described-\" and the description's content hash");
    return;
  }
  const std::string name = *root.string("name");
  if (name.empty()) fail("name", "must not be empty");
  m.t["name"] = name;
}

void map_core_type(Node& a, Mapping& m) {
  const auto core_type = a.string("core_type");
  if (!core_type) return;
  if (*core_type != "coupled" && *core_type != "split" && *core_type != "simd_vector") {
    fail(a.path("core_type"),
         "must be \"coupled\" (matrix and vector units in one core), \"split\" (separate matrix "
         "and vector cores) or \"simd_vector\" (vector units only, no matrix unit)",
         a.peek("core_type"));
  }
  m.core_type_known = true;
  m.vector_only = *core_type == "simd_vector";
  // The Target has no vector-only organisation: such a core is a coupled one whose vector
  // unit also runs the matrix work (map_matrix_on_vector).
  m.set("organisation", m.vector_only ? "coupled" : *core_type,
        "description: " + a.path("core_type") +
            (m.vector_only ? " (simd_vector: one vector unit per core, which also runs the matrix work)" : ""));
}

// Cores and clock are required in the full form; the short form states neither.
void map_architecture(Node& a, Mapping& m) {
  map_core_type(a, m);
  auto from = [&](const char* key) { return "description: " + a.path(key); };
  if (a.has("cores") || !m.short_form) {
    if (const auto cores = a.integer("cores", "ai_cores")) m.set("ai_cores", *cores, from("cores"));
  } else {
    m.assume("ai_cores", 1, "one core (the description gives no core count)");
  }
  if (a.has("vector_cores")) {
    m.set("vector_cores", *a.integer("vector_cores", "vector_cores"), from("vector_cores"));
  } else if (m.t.value("organisation", "") == "split") {
    a.find("vector_cores", ": a \"split\" core_type needs the number of vector cores");
  } else {
    m.set("vector_cores", m.t.value("ai_cores", Json(1)),
          m.vector_only ? "simd_vector: one vector unit per core" : "coupled: one vector unit per core");
  }
  if (a.has("clock_ghz") || !m.short_form) {
    if (const auto clock = a.number("clock_ghz", "clock_ghz")) m.set("clock_ghz", *clock, from("clock_ghz"));
  } else {
    m.assume("clock_ghz", reference().clock_ghz,
             "the ascend910b preset's clock (docs/hardware-facts.md section 1); the description gives none");
  }
  if (a.has("launch_us")) {
    m.set("launch_us", *a.number("launch_us", "launch_us"), from("launch_us"));
  } else {
    m.assume("launch_us", 5.0, "5 us default (not in the description)");
  }
  // Optional and not assumed: a part whose description does not say it runs sunk graphs runs
  // none (core/launch_mode.hpp).
  if (a.has("sunk_launch_us"))
    m.set("sunk_launch_us", *a.number("sunk_launch_us", "sunk_launch_us"), from("sunk_launch_us"));
  if (a.has("max_buffers_per_queue")) {
    m.set("max_buffers_per_queue", *a.integer("max_buffers_per_queue", "max_buffers_per_queue"),
          from("max_buffers_per_queue"));
  } else {
    m.assume("max_buffers_per_queue", 4, "4 default (not in the description)");
  }
  a.finish();
}

// A memory level's role and the Target fields its size, bandwidth and latency become
// (nullptr: the simulator has no such figure for that level).
struct LevelRole {
  const char* role;
  const char* size;
  const char* bandwidth;
  const char* latency;
};

constexpr std::array<LevelRole, 7> kRoles = {{
    {"DRAM", "device_memory_bytes", "hbm_bytes_per_cycle", "hbm_latency_cycles"},
    {"L2", "l2_bytes", "l2_bytes_per_cycle", "l2_latency_cycles"},
    {"L1", "l1_bytes", "mte2_bytes_per_cycle", "mte2_copy_start_cycles"},
    {"L0A", "l0a_bytes", "mte1_a_bytes_per_cycle", "mte1_start_cycles"},
    {"L0B", "l0b_bytes", "mte1_b_bytes_per_cycle", nullptr},
    {"L0C", "l0c_bytes", "fixpipe_bytes_per_cycle", nullptr},
    {"UB", "ub_bytes", "mte3_bytes_per_cycle", nullptr},
}};

const LevelRole* role_named(const std::string& name, bool vector_only) {
  std::string u = upper(name);
  if (u == "HBM" || u == "GM" || u == "DDR" || u == "LPDDR") u = "DRAM";
  // A vector-only core's one L0 (the articles' "L0") is the buffer its vector unit works in.
  if (u == "L0" && vector_only) u = "UB";
  for (const auto& r : kRoles) {
    if (u == r.role) return &r;
  }
  return nullptr;
}

bool is_matrix_buffer(const LevelRole& r) {
  const std::string_view role = r.role;
  return role == "L0A" || role == "L0B" || role == "L0C";
}

// Whether a level's figures may default: all of them in the short form, which states no
// sizes or bandwidths; a simd_vector core's matrix buffers, which it does not have.
bool may_default(const Mapping& m, const LevelRole& r) {
  return m.short_form || (m.vector_only && is_matrix_buffer(r));
}

// The default of a level's Target field: the reference part's figure (DRAM bandwidth
// per core, as it is shared), except what a default would only pretend to know.
void assume_level_figure(const char* field, Mapping& m, const std::string& why) {
  const std::string f = field;
  if (f == "device_memory_bytes") {
    m.note(f, "not given (" + why + "): a job checks no model against the device memory");
    return;
  }
  if (f == "fixpipe_bytes_per_cycle" && m.vector_only) {
    m.set(f, 0.0, "simd_vector: no fixpipe; results leave through the vector unit (0)");
    return;
  }
  const Target& ref = reference();
  if (f == "hbm_bytes_per_cycle") {
    const std::int64_t cores = m.t.value("ai_cores", std::int64_t{1});
    std::ostringstream how;
    how << "the ascend910b preset's " << ref.hbm_bytes_per_cycle << " B/cycle over its " << ref.ai_cores
        << " cores, times " << cores << " (" << why << ")";
    m.assume(f, ref.hbm_bytes_per_cycle / ref.ai_cores * double(cores), how.str());
    return;
  }
  m.assume(f, ref.to_json()[f], "the ascend910b preset's figure (docs/hardware-facts.md section 1; " + why + ")");
}

void map_level(Node& level, const LevelRole& r, Mapping& m) {
  if (const auto size = level.integer("size", r.size)) m.set(r.size, *size, "description: " + level.path("size"));
  if (const auto bw = level.number("bandwidth", r.bandwidth)) {
    m.set(r.bandwidth, *bw, "description: " + level.path("bandwidth"));
  }
  if (level.has("latency")) {
    if (r.latency) {
      m.set(r.latency, *level.number("latency", r.latency), "description: " + level.path("latency"));
    } else {
      level.number("latency", "hbm_latency_cycles");  // still checked: a typo should not pass
      m.ignored.push_back(level.path("latency"));
    }
  } else if (r.latency) {
    m.set(r.latency, 0.0, "description: no latency given (0)");
  }
  level.finish();
}

using Seen = std::map<std::string, std::string>;  // role -> path of the level that gave it

void claim(Seen& seen, const LevelRole& r, const std::string& at) {
  if (seen.count(r.role)) {
    fail(at, std::string("is a second ") + r.role + " level (the first is " + seen[r.role] + ")");
  }
  seen[r.role] = at;
}

// The full form: every level an object with its name (or role), size, bandwidth, latency.
void map_level_objects(const Json& levels, const std::string& list, Seen& seen, Mapping& m) {
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const std::string at = at_index(list, i);
    Node level(levels[i], at, m);
    const std::string name = level.string("name").value_or("");
    const LevelRole* r = role_named(name, m.vector_only);
    if (level.has("role")) {
      r = role_named(*level.string("role"), m.vector_only);
      if (!r) fail(at + ".role", "must be one of DRAM, L2, L1, L0A, L0B, L0C, UB", level.peek("role"));
    }
    if (!r) {
      if (!name.empty()) m.ignored.push_back(at + " (" + name + ": no role)");
      continue;
    }
    claim(seen, *r, at);
    map_level(level, *r, m);
  }
}

// The short form of the articles: "hierarchy": ["RF", "L0", "L1"] with a parallel
// "latency": [1, 8, 32]. A name gives the level's role and its latency; its size and
// bandwidth take the reference part's.
void map_level_names(Node& memory, const Json& names, Seen& seen, Mapping& m) {
  const std::string list = memory.path("hierarchy");
  const Json* latency = memory.has("latency") ? memory.find("latency") : nullptr;
  if (latency && (!latency->is_array() || latency->size() != names.size())) {
    fail(memory.path("latency"),
         "must be an array of one latency in cycles per level of " + list + " (" + std::to_string(names.size()) + ")",
         latency);
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string at = at_index(list, i), lat = at_index(memory.path("latency"), i);
    if (!names[i].is_string()) {
      fail(at, "must be a level name like " + list + "[0] (or give every level as an object)", &names[i]);
    }
    const std::string name = names[i].get<std::string>();
    const LevelRole* r = role_named(name, m.vector_only);
    if (!r) m.ignored.push_back(at + " (" + name + ": no role)");
    const bool latency_used = r && r->latency;
    if (latency && !latency_used) {
      checked_number((*latency)[i], lat, "hbm_latency_cycles");  // still checked: a typo should not pass
      m.ignored.push_back(lat);
    }
    if (!r) continue;
    claim(seen, *r, at);
    const std::string level = at + " (" + name + ")";
    assume_level_figure(r->size, m, level + " gives no size");
    assume_level_figure(r->bandwidth, m, level + " gives no bandwidth");
    if (!latency_used) continue;
    if (latency) {
      m.set(r->latency, checked_number((*latency)[i], lat, r->latency), "description: " + lat);
    } else {
      assume_level_figure(r->latency, m, level + " gives no latency");
    }
  }
}

void map_memory(Node& memory, Mapping& m) {
  const Json* levels = memory.array("hierarchy");
  if (!levels) {  // listed as missing
    memory.finish();
    return;
  }
  Seen seen;
  if (m.short_form) {
    map_level_names(memory, *levels, seen, m);
  } else {
    map_level_objects(*levels, memory.path("hierarchy"), seen, m);
  }
  for (const auto& r : kRoles) {
    if (seen.count(r.role)) continue;
    if (std::string_view(r.role) == "L2") {
      m.set("l2_bytes", 0, "description: no L2 level (0)");
      m.set("l2_bytes_per_cycle", 0.0, "description: no L2 level (0)");
      m.set("l2_latency_cycles", 0.0, "description: no L2 level (0)");
      continue;
    }
    if (may_default(m, r)) {
      const std::string why = std::string("no ") + r.role + " level in the description";
      for (const char* field : {r.size, r.bandwidth, r.latency}) {
        if (field) assume_level_figure(field, m, why);
      }
      continue;
    }
    m.missing.push_back("'" + memory.path("hierarchy") + "' has no " + r.role + " level");
    m.hints.insert(m.vector_only ? "expected levels DRAM, L1 and UB (or \"L0\"), each named so or given a \"role\" "
                                   "(L2 optional; L0A, L0B and L0C optional on a simd_vector core)"
                                 : "expected levels DRAM, L1, L0A, L0B, L0C and UB (L2 optional), each named so or "
                                   "given a \"role\"");
  }
  memory.finish();
}

// The articles put memory under architecture; the full form beside it. Either, not both.
Node memory_section(Node& root, Node& architecture) {
  if (!architecture.has("memory")) return root.object("memory");
  if (root.has("memory")) fail(architecture.path("memory"), "repeats the top-level 'memory': give the memory once");
  return architecture.object("memory");
}

bool is_short_form(const Node& memory) {
  const Json* h = memory.peek("hierarchy");
  return h && h->is_array() && !h->empty() && (*h)[0].is_string();
}

// Bytes of one element of an operand type name; 0 if unknown.
double operand_bytes(const std::string& type) {
  static const std::map<std::string, double> bytes = {
      {"fp16", 2},  {"float16", 2}, {"half", 2},  {"bf16", 2},  {"bfloat16", 2}, {"fp32", 4},  {"float32", 4},
      {"float", 4}, {"int8", 1},    {"uint8", 1}, {"int16", 2}, {"int32", 4},    {"int4", 0.5}};
  const auto it = bytes.find(type);
  return it == bytes.end() ? 0 : it->second;
}

// An operand type: an element type, and lanes when it names a vector of them, as the
// articles write it ("float32x8": 8 float32 lanes).
struct OperandType {
  std::string element;
  std::int64_t lanes = 1;
};

std::optional<OperandType> parse_operand(const std::string& type) {
  if (operand_bytes(type) > 0) return OperandType{type, 1};
  const auto x = type.rfind('x');
  if (x == std::string::npos || x == 0) return std::nullopt;
  const std::string lanes = type.substr(x + 1), element = type.substr(0, x);
  const auto digit = [](unsigned char c) { return std::isdigit(c) != 0; };
  if (lanes.empty() || lanes.size() > 4 || !std::all_of(lanes.begin(), lanes.end(), digit)) return std::nullopt;
  if (operand_bytes(element) == 0 || std::stoll(lanes) < 1) return std::nullopt;
  return OperandType{element, std::stoll(lanes)};
}

// The matrix rate class of an input operand type: the Target models fp16 (bf16 runs at
// the fp16 rate), int8 and fp32.
std::string rate_class(const std::string& type) {
  if (type == "fp16" || type == "float16" || type == "half" || type == "bf16" || type == "bfloat16") return "fp16";
  if (type == "int8" || type == "uint8") return "int8";
  if (type == "fp32" || type == "float32" || type == "float") return "fp32";
  return "";
}

// The dtype name (core/workload.hpp) of an operand type, or "" when the Target has none.
std::string dtype_name(const std::string& type) {
  if (type == "bf16" || type == "bfloat16") return "bfloat16";
  if (type == "int8") return "int8";
  const std::string cls = rate_class(type);
  return cls == "fp16" ? "float16" : cls == "fp32" ? "float32" : "";
}

struct Intrinsic {
  std::string path, name, unit, type;  // type: the first operand's element type
  std::int64_t lanes = 1;
  double throughput = 0;
  Json throughput_given;
  std::int64_t m = 0, k = 0, n = 0;
  bool complete = false;  // every figure given; the absent ones are listed as missing

  double elements_per_cycle() const { return throughput * double(lanes); }
};

// The articles' intrinsics give no unit: a shape makes a matrix instruction, none a vector one.
std::string read_unit(Node& in, Mapping& m) {
  if (in.has("unit")) return *in.string("unit");
  const std::string unit = in.has("shape") ? "matrix" : "vector";
  m.defaults.push_back(in.path("unit") + " = \"" + unit + "\"");
  m.note(in.path("unit"), "est.: no unit given; " + std::string(in.has("shape") ? "a shape" : "no shape") + ", so a " +
                              unit + " instruction");
  return unit;
}

// "operand_types", or "operands" as the articles call them; a type may carry lanes ("float32x8").
void read_operand_types(Node& in, Intrinsic& x) {
  if (in.has("operand_types") && in.has("operands")) {
    fail(in.path("operands"), "repeats 'operand_types': give one of the two");
  }
  const std::string key = in.has("operands") ? "operands" : "operand_types";
  const Json* types = in.find(key, " (or \"operands\")");
  if (!types) return;
  if (!types->is_array() || types->empty() || !(*types)[0].is_string()) {
    fail(in.path(key),
         "must be a non-empty array of type names (e.g. [\"fp16\", \"fp16\", \"fp32\"] or "
         "[\"float32x8\", \"float32x8\"])",
         types);
  }
  for (std::size_t i = 0; i < types->size(); ++i) {
    const Json& t = (*types)[i];
    if (!t.is_string() || !parse_operand(t.get<std::string>())) {
      fail(at_index(in.path(key), i),
           "must be one of fp16, bf16, fp32, int8, uint8, int16, int32, int4 (or float16, bfloat16, float32), "
           "optionally with lanes as in float32x8",
           &t);
    }
  }
  const OperandType first = *parse_operand((*types)[0].get<std::string>());
  x.type = first.element;
  x.lanes = first.lanes;
}

Intrinsic read_intrinsic(Node in, Mapping& m) {
  Intrinsic x;
  x.path = in.where();
  const std::size_t missing_before = m.missing.size();
  x.name = in.string("name").value_or(x.path);
  x.unit = read_unit(in, m);
  if (x.unit == "cube") x.unit = "matrix";
  if (x.unit != "matrix" && x.unit != "vector") {
    m.ignored.push_back(x.path + " (" + x.name + ": unit '" + x.unit + "' not modelled)");
    return x;
  }
  read_operand_types(in, x);
  if (const Json* tp = in.find("throughput")) {
    if (!tp->is_number() || !(tp->get<double>() > 0) || tp->get<double>() > 1e9) {
      fail(in.path("throughput"), "must be a number > 0 and <= 1e9", tp);
    }
    x.throughput = tp->get<double>();
    x.throughput_given = *tp;
  }
  if (x.unit == "matrix") {
    Node shape = in.object("shape");
    x.m = shape.integer("m", "cube_m").value_or(0);
    x.k = shape.integer("k", "cube_k").value_or(0);
    x.n = shape.integer("n", "cube_n").value_or(0);
    shape.finish();
  }
  in.finish();
  x.complete = m.missing.size() == missing_before;
  return x;
}

// The matrix unit: the fp16 intrinsic's shape, and the other precisions' rates over it.
void map_matrix(const std::vector<Intrinsic>& matrix, const std::string& at, Mapping& m) {
  const Intrinsic* base = nullptr;
  for (const auto& x : matrix) {
    if (rate_class(x.type) == "fp16") {
      base = &x;
      break;
    }
  }
  if (!base) {
    m.missing.push_back("'" + at +
                        "' has no matrix intrinsic with fp16 or bf16 operands; expected one such as "
                        "{\"name\": \"mmad\", \"unit\": \"matrix\", \"shape\": {\"m\": 16, \"k\": 16, \"n\": 16}, "
                        "\"operand_types\": [\"fp16\", \"fp16\", \"fp32\"], \"throughput\": 1}");
    return;
  }
  if (!base->complete) return;  // its absent figures are listed
  if (base->throughput != 1) {
    fail(base->path + ".throughput",
         "must be 1 for the fp16 matrix intrinsic (the simulator issues one m x k x n block per cycle; "
         "describe a faster unit by its larger shape)",
         &base->throughput_given);
  }
  m.t["cube_m"] = base->m;
  m.t["cube_k"] = base->k;
  m.t["cube_n"] = base->n;
  std::ostringstream shape;
  shape << "description: " << base->path << " (" << base->name << ") " << base->m << "x" << base->k << "x" << base->n
        << " " << base->type;
  m.note("cube", shape.str());
  const double base_macs = double(base->m) * double(base->k) * double(base->n);
  std::set<std::string> mapped = {"fp16"};
  for (const auto& x : matrix) {
    const std::string cls = rate_class(x.type);
    if (&x == base || !x.complete) continue;
    if (cls.empty() || mapped.count(cls)) {
      m.ignored.push_back(
          x.path + " (" + x.name + ": " +
          (cls.empty() ? "operand type " + x.type + " not modelled" : "a second " + cls + " intrinsic") + ")");
      continue;
    }
    mapped.insert(cls);
    const double rate = double(x.m) * double(x.k) * double(x.n) * x.throughput / base_macs;
    const std::string field = cls + "_rate";
    Target::check_bounds(field, rate, Json(rate), label(x.path) + " (MACs per cycle over the fp16 intrinsic's)");
    m.set(field, rate, "description: " + x.path + " (" + x.name + ") MACs per cycle over " + base->path + "'s");
  }
  if (!mapped.count("int8")) m.assume("int8_rate", 2.0, "2x fp16 default (no int8 matrix intrinsic)");
  if (!mapped.count("fp32")) m.assume("fp32_rate", 0.25, "1/4 of fp16 default (no fp32 matrix intrinsic)");
}

// The vector unit: the widest intrinsic's bytes per cycle (throughput x lanes x bytes).
void map_vector_width(const std::vector<Intrinsic>& vector, Mapping& m) {
  double best = 0;
  std::string best_path;
  for (const auto& x : vector) {
    const double bytes = x.elements_per_cycle() * operand_bytes(x.type);
    if (x.complete && bytes > best) best = bytes, best_path = x.path + " (" + x.name + ")";
  }
  if (best_path.empty()) return;  // every one lacks a figure, listed
  Target::check_bounds("vector_bytes_per_cycle", best, Json(best),
                       label(best_path) + " (throughput x lanes x operand bytes)");
  m.set("vector_bytes_per_cycle", best, "description: widest vector intrinsic, " + best_path);
}

bool is_multiply_accumulate(const std::string& name) {
  const std::string u = upper(name);
  for (const char* mac : {"MAC", "FMA", "MLA", "MAD"}) {
    if (u.find(mac) != std::string::npos) return true;
  }
  return false;
}

// A simd_vector core has no matrix unit: its vector unit runs the matrix work at its
// multiply-accumulate rate. The Target's matrix fields say so: a 1 x n x 1 unit with n
// the MACs per cycle (throughput x lanes), so tiles pad N to them, in every dtype at
// that rate, running the MAC's dtype.
void map_matrix_on_vector(const std::vector<Intrinsic>& vector, Mapping& m) {
  const Intrinsic* mac = nullptr;
  for (const auto& x : vector) {
    if (!x.complete) continue;
    const bool a = is_multiply_accumulate(x.name), b = mac && is_multiply_accumulate(mac->name);
    if (!mac || a > b || (a == b && x.elements_per_cycle() > mac->elements_per_cycle())) mac = &x;
  }
  if (!mac) return;
  const double rate = mac->elements_per_cycle();
  const double n = std::max(1.0, std::round(rate));
  Target::check_bounds("cube_n", n, Json(rate), label(mac->path) + " (MACs per cycle: throughput x lanes)");
  m.t["cube_m"] = 1;
  m.t["cube_k"] = 1;
  m.t["cube_n"] = std::int64_t(n);
  std::ostringstream how;
  how << "simd_vector: the vector unit runs the matrix work, " << n << " " << mac->type << " MACs per cycle as a 1x"
      << n << "x1 unit: " << mac->path << " (" << mac->name << ") throughput " << mac->throughput << " x " << mac->lanes
      << " lanes";
  if (is_multiply_accumulate(mac->name)) {
    m.note("cube", "description: " + how.str());
  } else {
    m.defaults.push_back("cube = 1x" + std::to_string(std::int64_t(n)) + "x1");
    m.note("cube", "est.: " + how.str() + ", one MAC per element (no intrinsic named mac, fma, mla or mad)");
  }
  const std::string why =
      "simd_vector: one MAC per lane in every dtype (the description gives the vector unit's "
      "rate in " +
      mac->type + " only)";
  m.assume("int8_rate", 1.0, why);
  m.assume("fp32_rate", 1.0, why);
  if (const std::string d = dtype_name(mac->type); !d.empty()) {
    m.set("matrix_dtypes", Json::array({d}), "description: " + mac->path + " operand type (the vector unit's MACs)");
  }
}

void map_intrinsics(const Json& list, const std::string& at, Mapping& m) {
  std::vector<Intrinsic> matrix, vector;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Intrinsic x = read_intrinsic(Node(list[i], at_index(at, i), m), m);
    if (x.unit == "matrix") matrix.push_back(x);
    if (x.unit == "vector") vector.push_back(x);
  }
  if (m.vector_only && !matrix.empty()) {
    fail(matrix.front().path,
         "is a matrix intrinsic, but core_type \"simd_vector\" has no matrix unit (use "
         "\"coupled\" or \"split\" for a core that has one)");
  }
  if (m.core_type_known && !m.vector_only) map_matrix(matrix, at, m);
  if (vector.empty()) {
    m.missing.push_back("'" + at +
                        "' has no vector intrinsic; expected one such as {\"name\": \"vadd\", \"unit\": "
                        "\"vector\", \"operand_types\": [\"fp16\"], \"throughput\": 128} (elements per cycle)");
    return;
  }
  map_vector_width(vector, m);
  if (m.vector_only) map_matrix_on_vector(vector, m);
}

// Every required field the description lacks, in one bad_input.
void refuse_missing(const Mapping& m) {
  if (m.missing.empty()) return;
  std::string msg = "hardware description: ";
  if (m.missing.size() > 1) msg += std::to_string(m.missing.size()) + " required fields are missing: ";
  for (std::size_t i = 0; i < m.missing.size(); ++i) msg += (i ? "; field " : "field ") + m.missing[i];
  for (const auto& hint : m.hints) msg += "; " + hint;
  throw_bad_input(msg);
}

}  // namespace

bool is_hardware_description(const Json& j) {
  return j.is_object() && (j.contains("architecture") || j.contains("memory") || j.contains("intrinsics"));
}

Target target_from_description(const Json& j) {
  Mapping m;
  Node root(j, "", m);
  map_name(root, j, m);
  Node architecture = root.object("architecture");
  Node memory = memory_section(root, architecture);
  m.short_form = is_short_form(memory);
  map_architecture(architecture, m);
  map_memory(memory, m);
  if (const Json* list = root.array("intrinsics")) map_intrinsics(*list, "intrinsics", m);
  if (root.has("source")) {
    const Json& notes = *root.find("source");
    if (!notes.is_object()) fail("source", "must be an object", &notes);
    for (const auto& [k, v] : notes.items()) m.source[k] = v;  // the author's notes win
  }
  root.finish();
  refuse_missing(m);
  m.source["ignored"] = m.ignored.empty() ? "nothing" : join(m.ignored);
  m.source["defaults"] = m.defaults.empty() ? "none" : join(m.defaults);
  m.t["source"] = m.source;
  return Target::from_json(m.t);
}

}  // namespace atvoss::simulator
