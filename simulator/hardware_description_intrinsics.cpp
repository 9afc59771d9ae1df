// The intrinsics section of a hardware description (internal/description_reader.hpp): each
// intrinsic's unit, operand types and throughput; the matrix unit from the fp16 intrinsic's
// shape and the other precisions' rates over it; the vector unit's width from the widest one;
// and, for a simd_vector core, the matrix work on the vector unit.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "simulator/internal/description_reader.hpp"

namespace atvoss::simulator::description {
namespace {

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

}  // namespace

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

}  // namespace atvoss::simulator::description
