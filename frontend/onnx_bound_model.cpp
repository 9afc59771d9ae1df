// Reading an ONNX model for the import (onnx_import.hpp, read_bound_onnx_model): the checks
// that must run before libonnx's shape inference (which divides by, and reads past, what a
// malformed model gives it), the symbolic dims bound, the shapes inferred with the shape
// computations folded, and the checks that need the inferred shapes.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/error.hpp"
#include "frontend/internal/graph_index.hpp"
#include "frontend/onnx_attributes.hpp"
#include "frontend/onnx_import.hpp"
#include "frontend/onnx_model_file.hpp"
#include "frontend/shape_folding.hpp"

namespace atvoss::frontend {
namespace {

// The sizes the inputs' symbolic dims take from the shapes the inputs will be fed at (an
// unnamed one set in place). bad_input naming the input for a shape of another rank, and the
// dim when two inputs, or an input and `dims`, give it two sizes.
std::map<std::string, std::int64_t> dims_of_input_shapes(onnx::ModelProto& model, const BoundDims& bound) {
  std::map<std::string, std::int64_t> sizes;
  std::set<std::string> seen;
  for (auto& input : *model.mutable_graph()->mutable_input()) {
    const auto given = bound.input_shapes.find(input.name());
    if (given == bound.input_shapes.end() || !input.type().has_tensor_type()) continue;
    seen.insert(input.name());
    auto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (std::size_t(shape->dim_size()) != given->second.size()) {
      throw_bad_input("model: input '" + input.name() + "' has " + std::to_string(shape->dim_size()) +
                      " dims; the shape given for it has " + std::to_string(given->second.size()));
    }
    for (int i = 0; i < shape->dim_size(); ++i) {
      auto& d = *shape->mutable_dim(i);
      const std::int64_t size = given->second[std::size_t(i)];
      if (size < 1 || size > (std::int64_t{1} << 31)) {
        throw_bad_input("model: input '" + input.name() + "': dim " + std::to_string(i) +
                        " of the shape given for it is " + std::to_string(size) + "; expected 1 to 2^31");
      }
      if (d.has_dim_value()) continue;  // a fixed size: a shape unlike it is refused when the input is fed
      if (!d.has_dim_param()) {
        d.set_dim_value(size);
        continue;
      }
      const std::string& name = d.dim_param();
      const auto named = bound.dims.find(name);
      const auto [at, added] = sizes.emplace(name, size);
      if ((named != bound.dims.end() && named->second != size) || (!added && at->second != size)) {
        throw_bad_input("model: dim '" + name + "' is " + std::to_string(size) + " in input '" + input.name() +
                        "' and " + std::to_string(named != bound.dims.end() ? named->second : at->second) +
                        " elsewhere");
      }
    }
  }
  for (const auto& [name, shape] : bound.input_shapes) {
    if (!seen.count(name)) throw_bad_input("model: the model has no input '" + name + "' (a shape is given for it)");
  }
  return sizes;
}

void bind_symbolic_dims(onnx::ModelProto& model, const BoundDims& bound) {
  const std::map<std::string, std::int64_t> fed = dims_of_input_shapes(model, bound);
  std::set<std::string> used;
  for (auto& input : *model.mutable_graph()->mutable_input()) {
    if (!input.type().has_tensor_type()) continue;
    auto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (auto& d : *shape->mutable_dim()) {
      if (d.has_dim_value()) continue;
      const auto named = d.has_dim_param() ? bound.dims.find(d.dim_param()) : bound.dims.end();
      const auto from_input = d.has_dim_param() ? fed.find(d.dim_param()) : fed.end();
      if (named != bound.dims.end()) used.insert(named->first);
      d.set_dim_value(named != bound.dims.end() ? named->second
                      : from_input != fed.end() ? from_input->second
                                                : bound.batch);
    }
  }
  for (const auto& [name, value] : bound.dims) {
    if (value < 1 || value > (std::int64_t{1} << 31)) {
      throw_bad_input("model: dim '" + name + "' must be from 1 to 2^31, got " + std::to_string(value));
    }
    if (!used.count(name)) throw_bad_input("model: no input of the model has a symbolic dim named '" + name + "'");
  }
}

// Window attributes outside their range: libonnx's shape inference divides by strides and
// dilations before any check of its own (strides=[0,0] killed the process with SIGFPE), so
// every node is checked first. bad_input naming the node, the attribute and what it holds.
void check_window_attributes(const onnx::GraphProto& graph) {
  for (const auto& node : graph.node()) {
    for (const auto& a : node.attribute()) {
      const std::string& n = a.name();
      const std::int64_t least = n == "pads" ? 0 : 1;
      if (n != "strides" && n != "dilations" && n != "kernel_shape" && n != "pads" && n != "group") continue;
      std::vector<std::int64_t> values(a.ints().begin(), a.ints().end());
      if (n == "group") values = {a.i()};
      for (const auto v : values) {
        if (v >= least && v <= (std::int64_t{1} << 31)) continue;
        std::string list;
        for (const auto x : values) list += (list.empty() ? "" : ", ") + std::to_string(x);
        throw_bad_input("model: node '" + (node.name().empty() ? node.op_type() : node.name()) + "' (" +
                        node.op_type() + "): attribute '" + n + "' must hold integers >= " + std::to_string(least) +
                        " and <= 2^31, got [" + list + "]");
      }
    }
  }
}

// Sizes no tensor has: a graph input's dim, or a value of a constant a Reshape, Expand, Tile or
// ConstantOfShape takes as its shape, beyond 2^31. libonnx's shape inference of a pool below
// a Reshape to [1, 8, 7e16, 56] ran for minutes (found by the mutation fuzzer). bad_input
// naming the tensor, where it was read and the value.
void check_shape_values(const onnx::GraphProto& graph) {
  constexpr std::int64_t kMost = std::int64_t{1} << 31;
  for (const auto& in : graph.input()) {
    for (const auto& d : in.type().tensor_type().shape().dim()) {
      if (d.has_dim_value() && d.dim_value() > kMost)
        throw_bad_input("model: input '" + in.name() + "' has a dim of " + std::to_string(d.dim_value()) +
                        ", expected at most 2^31");
    }
  }
  static const std::map<std::string, int> shape_inputs = {
      {"Reshape", 1}, {"Expand", 1}, {"Tile", 1}, {"ConstantOfShape", 0}};
  std::map<std::string, const onnx::TensorProto*> constants;
  for (const auto& init : graph.initializer()) constants[init.name()] = &init;
  for (const auto& node : graph.node()) {
    const auto at = shape_inputs.find(node.op_type());
    if (at == shape_inputs.end() || node.input_size() <= at->second) continue;
    const auto c = constants.find(node.input(at->second));
    if (c == constants.end()) continue;
    std::vector<std::int64_t> values;
    if (!integer_initializer_values(*c->second, values)) continue;
    for (const auto v : values) {
      if (v <= kMost) continue;
      throw_bad_input("model: node '" + (node.name().empty() ? node.op_type() : node.name()) + "' (" + node.op_type() +
                      "): shape '" + c->first + "' holds " + std::to_string(v) + ", expected sizes of at most 2^31");
    }
  }
}

// A window op's inputs and attribute lengths as ONNX defines them: libonnx's shape inference
// reads past a weight of too low a rank or a pads list of the wrong length (a Conv fed a
// BatchNormalization's 1-D scale crashed it, found by the mutation fuzzer). bad_input naming
// the node and what was expected.
void check_window_shapes(const onnx::GraphProto& graph) {
  std::map<std::string, int> ranks;  // initializers and graph inputs of known rank
  for (const auto& init : graph.initializer()) ranks[init.name()] = init.dims_size();
  for (const auto& in : graph.input()) {
    if (in.type().tensor_type().has_shape()) ranks[in.name()] = in.type().tensor_type().shape().dim_size();
  }
  static const std::set<std::string> window_ops = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool"};
  for (const auto& node : graph.node()) {
    if (!window_ops.count(node.op_type())) continue;
    const std::string where =
        "model: node '" + (node.name().empty() ? node.op_type() : node.name()) + "' (" + node.op_type() + ")";
    const bool conv = node.op_type() == "Conv" || node.op_type() == "ConvTranspose";
    if (conv && (node.input_size() < 2 || node.input_size() > 3)) throw_bad_input(where + ": expected 2 or 3 inputs");
    if (!conv && node.input_size() != 1) throw_bad_input(where + ": expected 1 input");
    int spatial = -1;  // from the data or the weight's rank, where known
    for (int i = 0; i < (conv ? 2 : 1); ++i) {
      const auto it = ranks.find(node.input(i));
      if (it == ranks.end()) continue;
      if (it->second < 3)
        throw_bad_input(where + ": input '" + node.input(i) + "' has rank " + std::to_string(it->second) +
                        ", expected 3 or more");
      if (spatial >= 0 && spatial != it->second - 2)
        throw_bad_input(where + ": the data and the weight differ in rank");
      spatial = it->second - 2;
    }
    for (const auto& a : node.attribute()) {
      const std::string& n = a.name();
      if (n != "strides" && n != "dilations" && n != "kernel_shape" && n != "pads") continue;
      const int want = n == "pads" ? 2 * spatial : spatial;
      const int len = a.ints_size();
      if ((spatial >= 0 && len != want) || (n == "pads" && len % 2 != 0) || len == 0) {
        throw_bad_input(
            where + ": attribute '" + n + "' has " + std::to_string(len) + " values" +
            (spatial >= 0 ? ", expected " + std::to_string(want) : std::string(", expected one per spatial axis")));
      }
    }
  }
}

// A conv's channels as ONNX defines them, once shapes are inferred: the data's C is the weight's
// dims[1] x group and group divides its dims[0] (ConvTranspose: C is its dims[0], which group
// divides). libonnx's shape inference checks neither, and the engine read past a weight of too
// few channels (a [8, 6, 3, 3] weight on 8 channels crashed atvoss-run). bad_input naming the node.
void check_conv_channels(const onnx::GraphProto& graph) {
  const GraphIndex g = index_graph(graph);
  for (const auto& node : graph.node()) {
    const bool transpose = node.op_type() == "ConvTranspose";
    if ((node.op_type() != "Conv" && !transpose) || node.input_size() < 2) continue;
    const auto x = g.shapes.find(node.input(0)), w = g.shapes.find(node.input(1));
    if (x == g.shapes.end() || w == g.shapes.end() || x->second.size() < 2 || w->second.size() < 2) continue;
    const std::string where =
        "model: node '" + (node.name().empty() ? node.op_type() : node.name()) + "' (" + node.op_type() + ")";
    const std::int64_t group = int_attr(node, "group", 1), c = x->second[1], w0 = w->second[0], w1 = w->second[1];
    if (group < 1) throw_bad_input(where + ": attribute 'group' is " + std::to_string(group) + ", expected 1 or more");
    const bool fits = transpose ? c == w0 && c % group == 0 : c == w1 * group && w0 % group == 0;
    if (!fits) {
      throw_bad_input(where + ": the data's " + std::to_string(c) + " channels do not match weight '" + node.input(1) +
                      "' of dims [" + std::to_string(w0) + ", " + std::to_string(w1) + ", ...] in " +
                      std::to_string(group) + " group(s)" +
                      (transpose ? ": expected dims[0] = channels" : ": expected dims[1] x group = channels"));
    }
  }
}

}  // namespace

onnx::ModelProto read_bound_onnx_model(const std::string& path, const BoundDims& bound) {
  if (bound.batch < 1) throw_bad_input("onnx import: batch must be >= 1");
  onnx::ModelProto model = read_onnx_model(path);
  check_window_attributes(model.graph());
  check_window_shapes(model.graph());
  check_shape_values(model.graph());
  bind_symbolic_dims(model, bound);
  try {
    infer_shapes_folding_shape_computations(model);
  } catch (const std::exception& e) {
    throw_bad_input("model: shape inference failed on '" + path + "': " + e.what());
  }
  check_conv_channels(model.graph());
  return model;
}

}  // namespace atvoss::frontend
