#include "tuner/precision.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.hpp"

namespace atvoss::tuner {
namespace {

DType dtype_of_bits(const Json& j, const std::string& where) {
  if (!j.is_object()) throw_bad_input(where + " must be an object {weight, act} or a dtype name");
  for (const auto& [k, v] : j.items()) {
    if (k != "weight" && k != "act" && k != "type") {
      throw_bad_input(where + ": unknown field '" + k + "'; expected weight, act, type");
    }
  }
  auto bits = [&](const char* f) {
    if (!j.contains(f) || !j[f].is_number_integer()) {
      throw_bad_input(where + ": field '" + f + "' must be 8, 16 or 32");
    }
    const auto b = j[f].get<std::int64_t>();
    if (b != 8 && b != 16 && b != 32) throw_bad_input(where + ": field '" + f + "' must be 8, 16 or 32");
    return b;
  };
  const auto w = bits("weight"), a = bits("act");
  if (w != a) {
    throw_bad_input(where + ": weight and act bits must agree (one dtype per kernel), got " +
                    std::to_string(w) + " and " + std::to_string(a));
  }
  if (j.contains("type")) {
    if (!j["type"].is_string()) throw_bad_input(where + ": field 'type' must be a dtype name");
    const DType d = parse_dtype(j["type"].get<std::string>());
    if (dtype_bytes(d) * 8 != w) throw_bad_input(where + ": field 'type' does not have " + std::to_string(w) + " bits");
    return d;
  }
  return w == 8 ? DType::int8 : w == 16 ? DType::float16 : DType::float32;
}

DType dtype_of(const Json& j, const std::string& where) {
  if (j.is_string()) return parse_dtype(j.get<std::string>());
  return dtype_of_bits(j, where);
}

}  // namespace

PrecisionSpec parse_precision(const Json& j) {
  if (j.is_string()) return PrecisionSpec::whole(dtype_of(j, "job spec: field 'precision'"));
  if (!j.is_object()) {
    throw_bad_input("job spec: field 'precision' must be a dtype name or an object of layers");
  }
  PrecisionSpec spec;
  for (const auto& [layer, v] : j.items()) {
    const DType d = dtype_of(v, "job spec: precision." + layer);
    if (layer == "*") {
      spec.rest = d;
    } else {
      spec.layers[layer] = d;
    }
  }
  return spec;
}

Workload with_dtype(const Workload& w, DType d) {
  if (w.is_table() || w.dtype() == d) return w;
  Json j = w.to_json();
  j["dtype"] = std::string(to_string(d));
  if (d == DType::int8 && w.info().takes_epilogue && !w.has_epilogue("requantize")) {
    j["epilogue"].push_back("requantize");
  }
  if (d != DType::int8) {
    auto& ep = j["epilogue"];
    ep.erase(std::remove(ep.begin(), ep.end(), Json("requantize")), ep.end());
  }
  return Workload::from_json(j);
}

TaskSet apply_precision(const TaskSet& tasks, const PrecisionSpec& spec) {
  if (spec.empty()) return tasks;
  TaskSet out(tasks.model(), tasks.batch());
  std::set<std::string> seen;
  for (const auto& t : tasks.tasks()) {
    for (const auto& [layer, count] : t.layers) {
      const auto it = spec.layers.find(layer);
      std::optional<DType> d = it != spec.layers.end() ? std::optional(it->second) : spec.rest;
      if (it != spec.layers.end()) seen.insert(layer);
      out.add(d ? with_dtype(t.workload, *d) : t.workload, layer, count);
    }
  }
  for (const auto& [op, n] : tasks.unsupported()) out.add_unsupported(op, n);
  for (const auto& [layer, d] : spec.layers) {
    if (!seen.count(layer)) {
      throw_bad_input("job spec: precision names layer '" + layer + "', which the model does not have");
    }
  }
  return out;
}

double int8_error_estimate(const Workload& w) {
  if (w.dtype() != DType::int8 || w.is_table()) return 0;
  double fan_in = 1;
  switch (w.family()) {
    case OpFamily::matmul: fan_in = double(w.dim("K")); break;
    case OpFamily::conv: {
      const double groups = w.dims().count("groups") ? double(w.dim("groups")) : 1;
      fan_in = double(w.dim("C")) / groups * double(w.dim("R") * w.dim("S"));
      break;
    }
    case OpFamily::depthwise: fan_in = double(w.dim("R") * w.dim("S")); break;
    case OpFamily::rows: fan_in = w.info().row_reduction || w.info().row_output == RowOutput::one_per_row
                                      ? double(w.dim("N")) : 1;
      break;
    case OpFamily::attention: fan_in = double(std::max(w.dim("D"), w.dim("L"))); break;
    case OpFamily::table:
    case OpFamily::custom: break;
  }
  return std::sqrt(fan_in) / 254.0;
}

}  // namespace atvoss::tuner
