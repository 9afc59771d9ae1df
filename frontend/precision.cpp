#include "frontend/precision.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.hpp"

namespace atvoss::frontend {
namespace {

// A dtype name, named in errors by where (the job spec's field), not as a workload's field.
DType dtype_named(const std::string& name, const std::string& where) {
  for (const DType d : {DType::float16, DType::bfloat16, DType::float32, DType::int8}) {
    if (name == to_string(d)) return d;
  }
  throw_bad_input(where + " must be one of float16, bfloat16, float32, int8; got '" + name + "'");
}

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
    throw_bad_input(where + ": weight and act bits must agree (one dtype per kernel), got " + std::to_string(w) +
                    " and " + std::to_string(a));
  }
  if (j.contains("type")) {
    if (!j["type"].is_string()) throw_bad_input(where + ": field 'type' must be a dtype name");
    const DType d = dtype_named(j["type"].get<std::string>(), where + ": field 'type'");
    if (dtype_bytes(d) * 8 != w) throw_bad_input(where + ": field 'type' does not have " + std::to_string(w) + " bits");
    return d;
  }
  return w == 8 ? DType::int8 : w == 16 ? DType::float16 : DType::float32;
}

DType dtype_of(const Json& j, const std::string& where) {
  if (j.is_string()) return dtype_named(j.get<std::string>(), where);
  return dtype_of_bits(j, where);
}

// Ops a whole-model int8 keeps in float: their error is not the matmul's rounding noise
// (softmax's exp, layernorm's statistics) or they move data only (pools).
bool keeps_float(const Workload& w) {
  static const std::set<std::string> ops = {"softmax",    "layernorm",       "lrn",   "max_pool2d",
                                            "avg_pool2d", "global_avg_pool", "reduce"};
  return ops.count(w.op()) > 0;
}

}  // namespace

std::optional<DType> model_dtype(const TaskSet& tasks) {
  const auto& all = tasks.tasks();
  for (const auto& t : all) {
    if (t.workload.is_matmul_like() || t.workload.is_conv()) return t.workload.dtype();
  }
  if (all.empty()) return std::nullopt;
  return all.front().workload.dtype();
}

PrecisionSpec fit_precision(const PrecisionSpec& spec, const Target& target, std::vector<std::string>& warnings,
                            std::optional<DType> model_dtype) {
  std::string runs;
  for (DType d : target.matrix_dtypes) runs += (runs.empty() ? "" : ", ") + std::string(to_string(d));
  const DType instead = target.supports(DType::float16) ? DType::float16 : DType::float32;
  auto fit = [&](DType d, const std::string& where) {
    if (target.supports(d)) return d;
    warnings.push_back("precision: " + std::string(to_string(d)) + " is not supported by " + target.name +
                       "'s matrix unit (it runs " + runs + "); " + where + " runs " + std::string(to_string(instead)) +
                       " instead");
    return instead;
  };
  PrecisionSpec out = spec;
  if (!out.rest && model_dtype && !target.supports(*model_dtype)) out.rest = model_dtype;
  if (out.rest) out.rest = fit(*out.rest, "the model");
  for (auto& [layer, d] : out.layers) d = fit(d, "layer '" + layer + "'");
  return out;
}

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
  auto& ep = j["epilogue"];
  auto drop = [&](const char* op) { ep.erase(std::remove(ep.begin(), ep.end(), Json(op)), ep.end()); };
  drop("quantize");
  drop("dequantize");
  if (d != DType::int8) drop("requantize");
  return Workload::from_json(j);
}

namespace {

// w with its epilogue's requantize replaced by op, or op appended.
Workload with_conversion(const Workload& w, const char* op) {
  Json j = w.to_json();
  auto& ep = j["epilogue"];
  ep.erase(std::remove(ep.begin(), ep.end(), Json("requantize")), ep.end());
  ep.push_back(op);
  return Workload::from_json(j);
}

// One layer of the model after precision.
struct Layer {
  Workload w;
  std::string name;
  int count = 1;
  bool standalone = false;
};

// A kernel of its own that quantises (into int8) or dequantises a's output, for a
// producer that takes no epilogue: one pass over the tensor as rows of up to 1024.
std::optional<Layer> conversion_layer(const Layer& a, bool into) {
  const double elements = a.w.out_elements();
  if (elements < 1) return std::nullopt;
  std::int64_t n = 1;
  while (n < 1024 && std::fmod(elements, double(n * 2)) == 0) n *= 2;
  const Json j{{"op", "map"},
               {"dtype", into ? std::string(to_string(a.w.dtype())) : std::string("int8")},
               {"dims", {{"M", std::int64_t(elements / double(n))}, {"N", n}}},
               {"epilogue", {into ? "quantize" : "dequantize"}}};
  return Layer{Workload::from_json(j), a.name + (into ? ".quantize" : ".dequantize"), a.count, false};
}

// Quantise into an int8 layer, dequantise out of one, along the layer chain: in the
// producer's epilogue where it takes one, else as a conversion layer after it.
std::vector<Layer> convert_at_precision_changes(std::vector<Layer> layers) {
  std::vector<Layer> out;
  std::optional<std::size_t> prev;  // the previous chain layer, in out
  for (auto& l : layers) {
    if (!l.standalone && prev) {
      Layer& a = out[*prev];
      const bool into = a.w.dtype() != DType::int8 && l.w.dtype() == DType::int8;
      const bool out_of = a.w.dtype() == DType::int8 && l.w.dtype() != DType::int8;
      if ((into || out_of) && a.w.info().takes_epilogue) {
        a.w = with_conversion(a.w, into ? "quantize" : "dequantize");
      } else if (into || out_of) {
        if (auto c = conversion_layer(a, into)) out.push_back(std::move(*c));
      }
    }
    out.push_back(std::move(l));
    if (!out.back().standalone) prev = out.size() - 1;
  }
  return out;
}

}  // namespace

TaskSet apply_precision(const TaskSet& tasks, const PrecisionSpec& spec) {
  if (spec.empty()) return tasks;
  TaskSet out(tasks.model(), tasks.batch());
  std::set<std::string> seen;
  // In layer order, so that the chain of layers (layout_choice.hpp) survives.
  std::vector<Layer> layers;
  for (const LayerStep& step : tasks.layer_order()) {
    const Workload& w = tasks.tasks()[step.task].workload;
    const auto it = spec.layers.find(step.name);
    std::optional<DType> d = it != spec.layers.end() ? std::optional(it->second) : spec.rest;
    if (it != spec.layers.end()) seen.insert(step.name);
    if (it == spec.layers.end() && d == DType::int8 && keeps_float(w)) d.reset();
    layers.push_back({d ? with_dtype(w, *d) : w, step.name, step.count, step.standalone});
  }
  for (const Layer& l : convert_at_precision_changes(std::move(layers))) {
    if (l.standalone) {
      out.add_standalone(l.w, l.name, l.count);
    } else {
      out.add(l.w, l.name, l.count);
    }
  }
  for (const auto& n : tasks.fallbacks()) out.add_fallback(n);
  for (const auto& [name, into] : tasks.folded()) out.add_folded(name, into);
  // Each node's kernel in the precision it now runs (a conversion layer is no node of the model).
  Graph graph = tasks.graph();
  for (const LayerStep& step : out.layer_order()) {
    const int i = graph.node_index(step.name);
    if (i >= 0 && graph.nodes()[i].kernel) graph.node(i).kernel = out.tasks()[step.task].workload;
  }
  out.set_graph(std::move(graph));
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
    case OpFamily::matmul:
      fan_in = double(w.dim("K"));
      break;
    case OpFamily::conv: {
      const double groups = w.dims().count("groups") ? double(w.dim("groups")) : 1;
      fan_in = double(w.dim("C")) / groups * double(w.dim("R") * w.dim("S"));
      break;
    }
    case OpFamily::depthwise:
      fan_in = double(w.dim("R") * w.dim("S"));
      break;
    case OpFamily::rows:
      fan_in = w.info().row_reduction || w.info().row_output == RowOutput::one_per_row ? double(w.dim("N")) : 1;
      break;
    case OpFamily::attention:
      fan_in = double(std::max(w.dim("D"), w.dim("L")));
      break;
    case OpFamily::table:
    case OpFamily::custom:
      break;
  }
  return std::sqrt(fan_in) / 254.0;
}

}  // namespace atvoss::frontend
