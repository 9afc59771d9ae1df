// Map: target_from_description() finds the memory section (beside or under
// architecture) and its form (short: level names; full: level objects), then reads the
// three sections in turn (map_architecture, map_memory, and map_intrinsics in
// hardware_description_intrinsics.cpp) through Node (internal/description_reader.hpp),
// which names every field by its dotted path, collects the keys nobody read as
// "ignored" and the required ones that are absent as "missing". refuse_missing() names
// all of those in one bad_input at the end, so a user fixes a description in one go.
// A figure the description may leave out takes the reference part's (reference()),
// noted "est." in source and listed in source["defaults"]. Every mapped number passes
// Target::check_bounds under its own path, so the description's limits are the
// Target's documented ones (examples/targets/README.md).
#include "simulator/hardware_description.hpp"

#include <array>
#include <map>
#include <sstream>

#include "simulator/internal/description_reader.hpp"

namespace atvoss::simulator {
namespace {

using namespace description;

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
