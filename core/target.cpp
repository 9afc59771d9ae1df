#include "core/target.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <string_view>

#include "core/error.hpp"

namespace atvoss {
namespace {

// One table drives parsing, serialising and the field list in error messages,
// so a new field cannot be forgotten in one of the three.
template <typename F>
void for_each_number(Target& t, F&& f) {
  f("clock_ghz", t.clock_ghz);
  f("int8_rate", t.int8_rate);
  f("fp32_rate", t.fp32_rate);
  f("vector_bytes_per_cycle", t.vector_bytes_per_cycle);
  f("hbm_bytes_per_cycle", t.hbm_bytes_per_cycle);
  f("l2_bytes_per_cycle", t.l2_bytes_per_cycle);
  f("mte2_bytes_per_cycle", t.mte2_bytes_per_cycle);
  f("mte2_copy_start_cycles", t.mte2_copy_start_cycles);
  f("mte1_a_bytes_per_cycle", t.mte1_a_bytes_per_cycle);
  f("mte1_b_bytes_per_cycle", t.mte1_b_bytes_per_cycle);
  f("mte1_start_cycles", t.mte1_start_cycles);
  f("fixpipe_bytes_per_cycle", t.fixpipe_bytes_per_cycle);
  f("mte3_bytes_per_cycle", t.mte3_bytes_per_cycle);
  f("hbm_latency_cycles", t.hbm_latency_cycles);
  f("l2_latency_cycles", t.l2_latency_cycles);
  f("launch_us", t.launch_us);
  f("sunk_launch_us", t.sunk_launch_us);
}

template <typename F>
void for_each_integer(Target& t, F&& f) {
  auto as64 = [&](const char* n, int& v) {
    std::int64_t x = v;
    f(n, x);
    v = static_cast<int>(x);
  };
  as64("ai_cores", t.ai_cores);
  as64("vector_cores", t.vector_cores);
  as64("cube_m", t.cube_m);
  as64("cube_n", t.cube_n);
  as64("cube_k", t.cube_k);
  as64("max_buffers_per_queue", t.max_buffers_per_queue);
  as64("fma_chains", t.fma_chains);
  f("l0a_bytes", t.l0a_bytes);
  f("l0b_bytes", t.l0b_bytes);
  f("l0c_bytes", t.l0c_bytes);
  f("l1_bytes", t.l1_bytes);
  f("ub_bytes", t.ub_bytes);
  f("l2_bytes", t.l2_bytes);
  f("device_memory_bytes", t.device_memory_bytes);
}

// Fields a description may leave out: they keep the default above.
bool is_optional(std::string_view n) {
  return n == "device_memory_bytes" || n == "fma_chains" || n == "sunk_launch_us";
}

// The documented range of every numeric field (the table in examples/targets/README.md):
// wide enough for any part an NPU could be, narrow enough that nothing the simulator
// multiplies overflows or turns absurd. `zero_ok` fields may be 0 (a part without that path or figure); for the others
// the minimum is exclusive for real numbers (> 0) and inclusive for integers (>= 1).
struct Range {
  double min, max;
  bool zero_ok;
};

Range range_of(std::string_view n) {
  constexpr double kBytes = 1099511627776.0;           // 1 TiB
  constexpr double kBytesPerCycle = 1048576;           // 1 MiB per cycle
  constexpr double kDeviceBytes = 1125899906842624.0;  // 1 PiB
  if (n == "ai_cores" || n == "vector_cores") return {1, 4096, false};
  if (n == "cube_m" || n == "cube_n" || n == "cube_k") return {1, 1024, false};
  if (n == "max_buffers_per_queue") return {1, 64, false};
  if (n == "fma_chains") return {0, 1024, true};
  if (n == "l2_bytes") return {0, kBytes, true};
  if (n == "device_memory_bytes") return {0, kDeviceBytes, true};
  if (n.ends_with("_bytes")) return {1, kBytes, false};
  if (n == "clock_ghz") return {0, 100, false};
  if (n == "int8_rate" || n == "fp32_rate") return {0, 64, false};
  if (n == "launch_us") return {0, 1e6, false};
  if (n == "sunk_launch_us") return {0, 1e6, true};
  if (n.ends_with("_bytes_per_cycle")) {
    return {0, kBytesPerCycle, n == "l2_bytes_per_cycle" || n == "fixpipe_bytes_per_cycle"};
  }
  return {0, 1e9, true};  // start costs and latencies, in cycles
}

// bad_input naming the field (as shown_as) and its range unless v lies in it (NaN never does).
void check_range(std::string_view n, double v, const Json& given, bool integer, const std::string& shown_as) {
  const Range r = range_of(n);
  if ((r.zero_ok || integer ? v >= r.min : v > r.min) && v <= r.max) return;
  std::ostringstream range;
  range << std::setprecision(17);
  if (integer) {
    range << "an integer in " << r.min << ".." << r.max;
  } else {
    range << (r.zero_ok ? ">= " : "> ") << r.min << " and <= " << r.max;
  }
  throw_bad_input(shown_as + " must be " + range.str() + ", got " + given.dump());
}

std::string field_label(const char* n) { return std::string("target: field '") + n + "'"; }

bool is_integer_field(std::string_view n) {
  bool found = false;
  Target t;
  for_each_integer(t, [&](const char* name, std::int64_t&) { found = found || n == name; });
  return found;
}

// "launch": optional; a sunk target's launch_us is its sunk_launch_us (core/launch_mode.hpp).
void read_launch(const Json& j, Target& t) {
  if (!j.contains("launch")) return;
  if (!j["launch"].is_string() || (j["launch"] != "host" && j["launch"] != "sunk")) {
    throw_bad_input("target: field 'launch' must be \"host\" or \"sunk\", got " + j["launch"].dump());
  }
  t.launch = j["launch"].get<std::string>();
  if (t.launch == "sunk" && (t.sunk_launch_us <= 0 || t.launch_us != t.sunk_launch_us)) {
    throw_bad_input("target: field 'launch' \"sunk\" needs sunk_launch_us > 0 and launch_us equal to it");
  }
}

}  // namespace

Target Target::from_json(const Json& j) {
  require_object(j, "target");
  Target t;
  Json known = t.to_json();
  for (const auto& [k, v] : j.items()) {
    if (!known.contains(k)) throw_bad_input("target: unknown field '" + k + "'");
  }
  t.name = require_string(j, "name", "target");
  t.organisation = require_string(j, "organisation", "target");
  if (t.organisation != "coupled" && t.organisation != "split" && t.organisation != "cpu") {
    throw_bad_input("target: field 'organisation' must be \"coupled\", \"split\" or \"cpu\", got \"" + t.organisation +
                    "\"");
  }
  for_each_number(t, [&](const char* n, double& v) {
    if (is_optional(n) && !j.contains(n)) return;
    v = require_number(j, n, "target");
    check_range(n, v, j[n], false, field_label(n));
  });
  for_each_integer(t, [&](const char* n, std::int64_t& v) {
    if (is_optional(n) && !j.contains(n)) return;
    v = require_int(j, n, "target");
    // An unsigned above INT64_MAX reads back negative; judge the value as written.
    check_range(n, j[n].is_number_unsigned() && v < 0 ? 1e300 : static_cast<double>(v), j[n], true, field_label(n));
  });
  if (j.contains("matrix_dtypes")) {
    const Json& d = j["matrix_dtypes"];
    if (!d.is_array()) throw_bad_input("target: field 'matrix_dtypes' must be an array of dtype names");
    for (const auto& name : d) {
      if (!name.is_string()) throw_bad_input("target: field 'matrix_dtypes' must be an array of dtype names");
      try {
        t.matrix_dtypes.push_back(parse_dtype(name.get<std::string>()));
      } catch (const Error&) {
        throw_bad_input("target: field 'matrix_dtypes' must list float16, bfloat16, float32 or int8; got " +
                        name.dump());
      }
    }
  }
  read_launch(j, t);
  if (j.contains("source")) {
    if (!j["source"].is_object()) throw_bad_input("target: field 'source' must be an object");
    t.source = j["source"];
  }
  return t;
}

void Target::check_bounds(std::string_view field, double v, const Json& given, const std::string& shown_as) {
  check_range(field, v, given, is_integer_field(field), shown_as);
}

Json Target::to_json() const {
  Target t = *this;
  Json j{{"name", name}, {"organisation", organisation}, {"launch", launch}, {"source", source}};
  for_each_number(t, [&](const char* n, double& v) { j[n] = v; });
  for_each_integer(t, [&](const char* n, std::int64_t& v) { j[n] = v; });
  j["matrix_dtypes"] = Json::array();
  for (DType d : matrix_dtypes) j["matrix_dtypes"].push_back(std::string(to_string(d)));
  return j;
}

std::string Target::key() const {
  Json j = to_json();
  j.erase("source");
  j.erase("device_memory_bytes");  // capacity does not change a kernel's time
  j.erase("matrix_dtypes");        // neither does the list of what else the unit could run
  j.erase("sunk_launch_us");       // a job in sunk mode runs with launch_us set to it
  if (launch == "host") j.erase("launch");
  if (fma_chains == 0) j.erase("fma_chains");
  return stable_key(j);
}

bool Target::supports(DType d) const {
  return matrix_dtypes.empty() || std::find(matrix_dtypes.begin(), matrix_dtypes.end(), d) != matrix_dtypes.end();
}

double Target::macs_per_cycle(DType d) const {
  const double fp16 = double(cube_m) * cube_n * cube_k;
  switch (d) {
    case DType::int8:
      return fp16 * int8_rate;
    case DType::float32:
      return fp16 * fp32_rate;
    default:
      return fp16;
  }
}

double Target::peak_flops(DType d) const { return 2.0 * macs_per_cycle(d) * ai_cores * clock_ghz * 1e9; }

}  // namespace atvoss
