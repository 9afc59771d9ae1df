// Map: target_from_description() reads the three sections in turn (map_architecture,
// map_memory, map_intrinsics) through Node, which names every field by its dotted
// path in errors and collects the keys nobody read as "ignored". Every mapped number
// passes Target::check_bounds under its own path, so the description's limits are
// the Target's documented ones (examples/targets/README.md).
#include "simulator/hardware_description.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"

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

// One JSON object of the description at a dotted path. The keys read through it are
// used; finish() lists the others as ignored.
class Node {
 public:
  Node(const Json& j, std::string path, std::vector<std::string>& ignored)
      : j_(j), path_(std::move(path)), ignored_(ignored) {
    if (!j_.is_object()) fail(path_.empty() ? "(top level)" : path_, "must be an object", &j_);
  }

  const std::string& where() const { return path_; }
  std::string path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  bool has(const std::string& key) const { return j_.contains(key); }

  const Json& get(const std::string& key) {
    if (!j_.contains(key)) fail(path(key), "is missing");
    used_.insert(key);
    return j_[key];
  }

  std::string string(const std::string& key) {
    const Json& v = get(key);
    if (!v.is_string()) fail(path(key), "must be a string", &v);
    return v.get<std::string>();
  }

  // A number within the bounds of Target field `as` (check_bounds), reported under our path.
  double number(const std::string& key, std::string_view as) {
    const Json& v = get(key);
    if (!v.is_number()) fail(path(key), "must be a number", &v);
    Target::check_bounds(as, v.get<double>(), v, label(path(key)));
    return v.get<double>();
  }

  std::int64_t integer(const std::string& key, std::string_view as) {
    const Json& v = get(key);
    if (!v.is_number_integer()) fail(path(key), "must be an integer", &v);
    const double shown = v.is_number_unsigned() && v.get<std::int64_t>() < 0 ? 1e300 : v.get<double>();
    Target::check_bounds(as, shown, v, label(path(key)));
    return v.get<std::int64_t>();
  }

  Node object(const std::string& key) { return Node(get(key), path(key), ignored_); }

  const Json& array(const std::string& key) {
    const Json& v = get(key);
    if (!v.is_array() || v.empty()) fail(path(key), "must be a non-empty array", &v);
    return v;
  }

  void finish() const {
    for (const auto& [k, v] : j_.items()) {
      if (!used_.count(k)) ignored_.push_back(path(k));
    }
  }

 private:
  const Json& j_;
  std::string path_;
  std::vector<std::string>& ignored_;
  std::set<std::string> used_;
};

// The Target being built, as the JSON Target::from_json reads, with a source note per field.
struct Mapping {
  Json t = Json::object();
  Json source = Json::object();
  std::vector<std::string> ignored;

  void set(const std::string& field, Json v, const std::string& how) {
    t[field] = std::move(v);
    source[field] = how;
  }
  void note(const std::string& field, const std::string& how) { source[field] = how; }
};

void map_architecture(Node a, Mapping& m) {
  const std::string core_type = a.string("core_type");
  if (core_type != "coupled" && core_type != "split") {
    fail(a.path("core_type"),
         "must be \"coupled\" (matrix and vector units in one core) or \"split\" (separate matrix "
         "and vector cores)",
         &a.get("core_type"));
  }
  auto from = [&](const char* key) { return "description: " + a.path(key); };
  m.set("organisation", core_type, from("core_type"));
  const std::int64_t cores = a.integer("cores", "ai_cores");
  m.set("ai_cores", cores, from("cores"));
  if (a.has("vector_cores")) {
    m.set("vector_cores", a.integer("vector_cores", "vector_cores"), from("vector_cores"));
  } else if (core_type == "split") {
    fail(a.path("vector_cores"), "is missing: a \"split\" core_type needs the number of vector cores");
  } else {
    m.set("vector_cores", cores, "coupled: one vector unit per core");
  }
  m.set("clock_ghz", a.number("clock_ghz", "clock_ghz"), from("clock_ghz"));
  if (a.has("launch_us")) {
    m.set("launch_us", a.number("launch_us", "launch_us"), from("launch_us"));
  } else {
    m.set("launch_us", 5.0, "est.: 5 us default (not in the description)");
  }
  if (a.has("max_buffers_per_queue")) {
    m.set("max_buffers_per_queue", a.integer("max_buffers_per_queue", "max_buffers_per_queue"),
          from("max_buffers_per_queue"));
  } else {
    m.set("max_buffers_per_queue", 4, "est.: 4 default (not in the description)");
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

const LevelRole* role_named(const std::string& name) {
  std::string u = upper(name);
  if (u == "HBM" || u == "GM" || u == "DDR" || u == "LPDDR") u = "DRAM";
  for (const auto& r : kRoles) {
    if (u == r.role) return &r;
  }
  return nullptr;
}

void map_level(Node& level, const LevelRole& r, Mapping& m) {
  m.set(r.size, level.integer("size", r.size), "description: " + level.path("size"));
  m.set(r.bandwidth, level.number("bandwidth", r.bandwidth), "description: " + level.path("bandwidth"));
  if (level.has("latency")) {
    if (r.latency) {
      m.set(r.latency, level.number("latency", r.latency), "description: " + level.path("latency"));
    } else {
      level.number("latency", "hbm_latency_cycles");  // still checked: a typo should not pass
      m.ignored.push_back(level.path("latency"));
    }
  } else if (r.latency) {
    m.set(r.latency, 0.0, "description: no latency given (0)");
  }
  level.finish();
}

void map_memory(Node memory, Mapping& m) {
  const Json& levels = memory.array("hierarchy");
  std::map<std::string, std::string> seen;  // role -> path of the level that gave it
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const std::string at = memory.path("hierarchy") + "[" + std::to_string(i) + "]";
    Node level(levels[i], at, m.ignored);
    const std::string name = level.string("name");
    const LevelRole* r = role_named(name);
    if (level.has("role")) {
      r = role_named(level.string("role"));
      if (!r) fail(at + ".role", "must be one of DRAM, L2, L1, L0A, L0B, L0C, UB", &level.get("role"));
    }
    if (!r) {
      m.ignored.push_back(at + " (" + name + ": no role)");
      continue;
    }
    if (seen.count(r->role)) {
      fail(at, std::string("is a second ") + r->role + " level (the first is " + seen[r->role] + ")");
    }
    seen[r->role] = at;
    map_level(level, *r, m);
  }
  for (const auto& r : kRoles) {
    if (seen.count(r.role)) continue;
    if (std::string_view(r.role) == "L2") {
      m.set("l2_bytes", 0, "description: no L2 level (0)");
      m.set("l2_bytes_per_cycle", 0.0, "description: no L2 level (0)");
      m.set("l2_latency_cycles", 0.0, "description: no L2 level (0)");
      continue;
    }
    fail(memory.path("hierarchy"), std::string("has no ") + r.role +
                                       " level; expected levels DRAM, L1, L0A, L0B, L0C and UB (L2 "
                                       "optional), each named so or given a \"role\"");
  }
  memory.finish();
}

// Bytes of one element of an operand type name; 0 if unknown.
double operand_bytes(const std::string& type) {
  static const std::map<std::string, double> bytes = {
      {"fp16", 2}, {"float16", 2}, {"half", 2}, {"bf16", 2}, {"bfloat16", 2},
      {"fp32", 4}, {"float32", 4}, {"float", 4}, {"int8", 1}, {"uint8", 1},
      {"int16", 2}, {"int32", 4}, {"int4", 0.5}};
  const auto it = bytes.find(type);
  return it == bytes.end() ? 0 : it->second;
}

// The matrix rate class of an input operand type: the Target models fp16 (bf16 runs at
// the fp16 rate), int8 and fp32.
std::string rate_class(const std::string& type) {
  if (type == "fp16" || type == "float16" || type == "half" || type == "bf16" || type == "bfloat16") return "fp16";
  if (type == "int8" || type == "uint8") return "int8";
  if (type == "fp32" || type == "float32" || type == "float") return "fp32";
  return "";
}

struct Intrinsic {
  std::string path, name, unit, type;
  double throughput = 0;
  Json throughput_given;
  std::int64_t m = 0, k = 0, n = 0;
};

Intrinsic read_intrinsic(Node in, std::vector<std::string>& ignored) {
  Intrinsic x;
  x.path = in.where();
  x.name = in.string("name");
  x.unit = in.string("unit");
  if (x.unit == "cube") x.unit = "matrix";
  if (x.unit != "matrix" && x.unit != "vector") {
    ignored.push_back(x.path + " (" + x.name + ": unit '" + x.unit + "' not modelled)");
    return x;
  }
  const Json& types = in.get("operand_types");
  if (!types.is_array() || types.empty() || !types[0].is_string()) {
    fail(in.path("operand_types"), "must be a non-empty array of type names (e.g. [\"fp16\", \"fp16\", \"fp32\"])",
         &types);
  }
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (!types[i].is_string() || operand_bytes(types[i].get<std::string>()) == 0) {
      fail(in.path("operand_types") + "[" + std::to_string(i) + "]",
           "must be one of fp16, bf16, fp32, int8, uint8, int16, int32, int4", &types[i]);
    }
  }
  x.type = types[0].get<std::string>();
  const Json& tp = in.get("throughput");
  if (!tp.is_number() || !(tp.get<double>() > 0) || tp.get<double>() > 1e9) {
    fail(in.path("throughput"), "must be a number > 0 and <= 1e9", &tp);
  }
  x.throughput = tp.get<double>();
  x.throughput_given = tp;
  if (x.unit == "matrix") {
    Node shape = in.object("shape");
    x.m = shape.integer("m", "cube_m");
    x.k = shape.integer("k", "cube_k");
    x.n = shape.integer("n", "cube_n");
    shape.finish();
  }
  in.finish();
  return x;
}

void map_intrinsics(const Json& list, const std::string& at, Mapping& m) {
  std::vector<Intrinsic> matrix, vector;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Intrinsic x = read_intrinsic(Node(list[i], at + "[" + std::to_string(i) + "]", m.ignored), m.ignored);
    if (x.unit == "matrix") matrix.push_back(x);
    if (x.unit == "vector") vector.push_back(x);
  }
  const Intrinsic* base = nullptr;
  for (const auto& x : matrix) {
    if (rate_class(x.type) == "fp16") {
      base = &x;
      break;
    }
  }
  if (!base) {
    fail(at, "has no matrix intrinsic with fp16 or bf16 operands; expected one such as {\"name\": \"mmad\", "
             "\"unit\": \"matrix\", \"shape\": {\"m\": 16, \"k\": 16, \"n\": 16}, \"operand_types\": "
             "[\"fp16\", \"fp16\", \"fp32\"], \"throughput\": 1}");
  }
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
  shape << "description: " << base->path << " (" << base->name << ") " << base->m << "x" << base->k << "x"
        << base->n << " " << base->type;
  m.note("cube", shape.str());
  const double base_macs = double(base->m) * double(base->k) * double(base->n);
  std::set<std::string> mapped = {"fp16"};
  m.set("int8_rate", 2.0, "est.: 2x fp16 default (no int8 matrix intrinsic)");
  m.set("fp32_rate", 0.25, "est.: 1/4 of fp16 default (no fp32 matrix intrinsic)");
  for (const auto& x : matrix) {
    const std::string cls = rate_class(x.type);
    if (&x == base) continue;
    if (cls.empty() || mapped.count(cls)) {
      m.ignored.push_back(x.path + " (" + x.name + ": " +
                          (cls.empty() ? "operand type " + x.type + " not modelled" : "a second " + cls + " intrinsic") +
                          ")");
      continue;
    }
    mapped.insert(cls);
    const double rate = double(x.m) * double(x.k) * double(x.n) * x.throughput / base_macs;
    const std::string field = cls + "_rate";
    Target::check_bounds(field, rate, Json(rate), label(x.path) + " (MACs per cycle over the fp16 intrinsic's)");
    m.set(field, rate, "description: " + x.path + " (" + x.name + ") MACs per cycle over " + base->path + "'s");
  }
  if (vector.empty()) {
    fail(at, "has no vector intrinsic; expected one such as {\"name\": \"vadd\", \"unit\": \"vector\", "
             "\"operand_types\": [\"fp16\"], \"throughput\": 128} (elements per cycle)");
  }
  double best = 0;
  std::string best_path;
  for (const auto& x : vector) {
    const double bytes = x.throughput * operand_bytes(x.type);
    if (bytes > best) best = bytes, best_path = x.path + " (" + x.name + ")";
  }
  Target::check_bounds("vector_bytes_per_cycle", best, Json(best),
                       label(best_path) + " (throughput x operand bytes)");
  m.set("vector_bytes_per_cycle", best, "description: widest vector intrinsic, " + best_path);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

bool is_hardware_description(const Json& j) {
  return j.is_object() && (j.contains("architecture") || j.contains("memory") || j.contains("intrinsics"));
}

Target target_from_description(const Json& j) {
  Mapping m;
  Node root(j, "", m.ignored);
  const std::string name = root.string("name");
  if (name.empty()) fail("name", "must not be empty");
  m.t["name"] = name;
  map_architecture(root.object("architecture"), m);
  map_memory(root.object("memory"), m);
  map_intrinsics(root.array("intrinsics"), "intrinsics", m);
  if (root.has("source")) {
    const Json& notes = root.get("source");
    if (!notes.is_object()) fail("source", "must be an object", &notes);
    for (const auto& [k, v] : notes.items()) m.source[k] = v;  // the author's notes win
  }
  root.finish();
  m.source["ignored"] = m.ignored.empty() ? "nothing" : join(m.ignored);
  m.t["source"] = m.source;
  return Target::from_json(m.t);
}

}  // namespace atvoss::simulator
