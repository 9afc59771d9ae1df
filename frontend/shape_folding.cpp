#include "frontend/shape_folding.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/shape_inference/implementation.h>

#include "core/error.hpp"
#include "frontend/einsum_equation.hpp"
#include "frontend/onnx_attributes.hpp"

namespace atvoss::frontend {
namespace {

using ShapeData = std::unordered_map<std::string, onnx::TensorShapeProto>;

// Data propagation's values (and the shapes inferred for every tensor).
ShapeData infer_with_data(onnx::ModelProto& model) {
  ShapeData data;
  const onnx::ShapeInferenceOptions options(false, 0, true);
  onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options, &data);
  return data;
}

// Integer arithmetic that libonnx's data propagation leaves out (Div, the integer division of
// sizes exporters write for a head's width), evaluated where both operands are known: their
// values added to data, in the nodes' order, so a chain of them is known in one pass.
void propagate_integer_arithmetic(const onnx::GraphProto& g, ShapeData& data) {
  std::map<std::string, std::vector<std::int64_t>> known;
  for (const auto& t : g.initializer()) {
    std::vector<std::int64_t> v;
    if (integer_initializer_values(t, v)) known[t.name()] = v;
  }
  auto value = [&](const std::string& name, std::vector<std::int64_t>& v) {
    if (const auto it = known.find(name); it != known.end()) return v = it->second, true;
    const auto it = data.find(name);
    if (it == data.end()) return false;
    v.clear();
    for (const auto& d : it->second.dim()) {
      if (!d.has_dim_value()) return false;
      v.push_back(d.dim_value());
    }
    return true;
  };
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div"};
  for (const auto& n : g.node()) {
    if (!ops.count(n.op_type()) || n.input_size() != 2 || n.output_size() != 1 || data.count(n.output(0))) continue;
    std::vector<std::int64_t> a, b;
    if (!value(n.input(0), a) || !value(n.input(1), b) || a.empty() || b.empty()) continue;
    if (a.size() != b.size() && a.size() != 1 && b.size() != 1) continue;
    onnx::TensorShapeProto out;
    bool ok = true;
    for (std::size_t i = 0; i < std::max(a.size(), b.size()) && ok; ++i) {
      const std::int64_t x = a[a.size() == 1 ? 0 : i], y = b[b.size() == 1 ? 0 : i];
      const std::string& op = n.op_type();
      ok = op != "Div" || y != 0;
      // ONNX's integer Div truncates toward zero, as C++'s does.
      if (ok) out.add_dim()->set_dim_value(op == "Add" ? x + y : op == "Sub" ? x - y : op == "Mul" ? x * y : x / y);
    }
    if (ok) data[n.output(0)] = out;
  }
}

// The int64 or int32 constant holding `value` for tensor `info` (its rank 0 or 1), or false
// where the value is not wholly known or the tensor is of another type.
bool constant_of(const onnx::ValueInfoProto& info, const onnx::TensorShapeProto& value, onnx::TensorProto& out) {
  const auto& type = info.type().tensor_type();
  const int elem = type.elem_type();
  if (elem != onnx::TensorProto::INT64 && elem != onnx::TensorProto::INT32) return false;
  if (!type.has_shape() || type.shape().dim_size() > 1) return false;
  for (const auto& d : value.dim()) {
    if (!d.has_dim_value()) return false;
  }
  if (type.shape().dim_size() == 0 && value.dim_size() != 1) return false;
  out.set_data_type(elem);
  if (type.shape().dim_size() == 1) out.add_dims(value.dim_size());
  for (const auto& d : value.dim()) {
    if (elem == onnx::TensorProto::INT64)
      out.add_int64_data(d.dim_value());
    else
      out.add_int32_data(static_cast<std::int32_t>(d.dim_value()));
  }
  return true;
}

// Each node input whose value data propagation knows, and that no initializer or graph input
// holds already, rewired to a new initializer of that value; the number rewired.
int fold_known_values(onnx::GraphProto& g, const ShapeData& data) {
  std::set<std::string> constant;
  for (const auto& t : g.initializer()) constant.insert(t.name());
  for (const auto& i : g.input()) constant.insert(i.name());
  std::map<std::string, const onnx::ValueInfoProto*> info;
  for (const auto& v : g.value_info()) info[v.name()] = &v;
  std::map<std::string, std::string> folded;  // tensor -> its initializer
  int rewired = 0;
  for (auto& node : *g.mutable_node()) {
    if (node.op_type() == "Constant") continue;
    for (auto& input : *node.mutable_input()) {
      if (input.empty() || constant.count(input)) continue;
      auto name = folded.find(input);
      if (name == folded.end()) {
        const auto value = data.find(input);
        const auto it = info.find(input);
        onnx::TensorProto t;
        if (value == data.end() || it == info.end() || !constant_of(*it->second, value->second, t)) continue;
        t.set_name(input + "/folded");
        *g.add_initializer() = t;
        name = folded.emplace(input, t.name()).first;
      }
      input = name->second;
      ++rewired;
    }
  }
  return rewired;
}

// Drops the nodes none of whose outputs any node or the graph reads, until none is left.
void drop_unused_nodes(onnx::GraphProto& g) {
  for (bool dropped = true; dropped;) {
    std::set<std::string> read;
    for (const auto& o : g.output()) read.insert(o.name());
    for (const auto& n : g.node()) read.insert(n.input().begin(), n.input().end());
    dropped = false;
    auto* nodes = g.mutable_node();
    for (int i = nodes->size() - 1; i >= 0; --i) {
      bool used = false;
      for (const auto& o : nodes->Get(i).output()) used = used || read.count(o);
      if (used) continue;
      nodes->DeleteSubrange(i, 1);
      dropped = true;
    }
  }
}

// Whether a type has a shape with every dim known.
bool whole_shape(const onnx::TypeProto& t) {
  if (!t.tensor_type().has_shape()) return false;
  for (const auto& d : t.tensor_type().shape().dim()) {
    if (!d.has_dim_value()) return false;
  }
  return true;
}

// The types inference knows, by tensor: the graph's inputs and its value_info.
std::map<std::string, onnx::TypeProto> known_types(const onnx::GraphProto& g) {
  std::map<std::string, onnx::TypeProto> typed;
  for (const auto& v : g.input()) typed[v.name()] = v.type();
  for (const auto& v : g.value_info()) typed[v.name()] = v.type();
  for (const auto& v : g.output()) {
    if (!typed.count(v.name()) || whole_shape(v.type())) typed[v.name()] = v.type();
  }
  return typed;
}

// The shapes given where libonnx left them open, written to the graph's outputs and value_info
// (replacing an entry with an open dim), for the next round of inference to go on from.
void give_types(onnx::GraphProto& g, const std::map<std::string, onnx::TypeProto>& given) {
  std::set<std::string> replaced;
  for (auto& v : *g.mutable_output()) {
    if (const auto it = given.find(v.name()); it != given.end())
      *v.mutable_type() = it->second, replaced.insert(v.name());
  }
  for (auto& v : *g.mutable_value_info()) {
    if (const auto it = given.find(v.name()); it != given.end())
      *v.mutable_type() = it->second, replaced.insert(v.name());
  }
  for (const auto& [name, type] : given) {
    if (replaced.count(name)) continue;
    auto* v = g.add_value_info();
    v->set_name(name);
    *v->mutable_type() = type;
  }
}

// A tensor type of an element type and dims.
onnx::TypeProto tensor_type(int elem, const std::vector<std::int64_t>& dims) {
  onnx::TypeProto t;
  t.mutable_tensor_type()->set_elem_type(elem);
  auto* shape = t.mutable_tensor_type()->mutable_shape();
  for (std::int64_t d : dims) shape->add_dim()->set_dim_value(d);
  return t;
}

std::vector<std::int64_t> dims_of(const onnx::TypeProto& t) {
  std::vector<std::int64_t> dims;
  for (const auto& d : t.tensor_type().shape().dim()) dims.push_back(d.dim_value());
  return dims;
}

// A one-value constant of any numeric type (OneHot's depth) as an integer; false otherwise.
bool whole_constant(const onnx::TensorProto& t, std::int64_t& out) {
  std::vector<std::int64_t> v;
  if (integer_initializer_values(t, v)) return v.size() == 1 ? (out = v[0], true) : false;
  if (t.data_type() != onnx::TensorProto::FLOAT) return false;
  float f = 0;
  if (t.float_data_size() == 1) {
    f = t.float_data(0);
  } else if (t.raw_data().size() == sizeof(float)) {
    std::memcpy(&f, t.raw_data().data(), sizeof(float));
  } else {
    return false;
  }
  out = std::int64_t(f);
  return true;
}

// The output type of a Resize of opset 11 on (opset 18's axes and keep_aspect_ratio_policy,
// which libonnx 1.12 does not read) with constant scales or sizes: each listed axis's size
// floor(in x scale), a size given, or under an aspect policy round(in x the one scale).
bool resize_type(const onnx::NodeProto& n, const onnx::TypeProto& x,
                 const std::map<std::string, const onnx::TensorProto*>& constants, onnx::TypeProto& out) {
  std::vector<std::int64_t> dims = dims_of(x), axes = ints_attr(n, "axes");
  const auto rank = std::int64_t(dims.size());
  if (axes.empty()) {
    for (std::int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (auto& a : axes) {
    if (a < -rank || a >= rank) return false;
    if (a < 0) a += rank;
  }
  auto constant = [&](int i) {
    const auto it = n.input_size() > i ? constants.find(n.input(i)) : constants.end();
    return it == constants.end() ? nullptr : it->second;
  };
  std::vector<float> scales;
  std::vector<std::int64_t> sizes;
  if (const auto* t = constant(2); t && float_values(*t, scales) && !scales.empty()) {
    if (scales.size() != axes.size()) return false;
    for (std::size_t i = 0; i < axes.size(); ++i) {
      auto& d = dims[std::size_t(axes[i])];
      d = std::int64_t(std::floor(double(d) * double(scales[i])));
    }
  } else if (const auto* z = constant(3); z && integer_initializer_values(*z, sizes) && sizes.size() == axes.size()) {
    const std::string policy = string_attr(n, "keep_aspect_ratio_policy", "stretch");
    double scale = policy == "not_larger" ? INFINITY : 0;
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const double r = double(sizes[i]) / double(dims[std::size_t(axes[i])]);
      scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
    }
    for (std::size_t i = 0; i < axes.size(); ++i) {
      auto& d = dims[std::size_t(axes[i])];
      d = policy == "stretch" ? sizes[i] : std::int64_t(std::round(double(d) * scale));
    }
  } else {
    return false;
  }
  out = tensor_type(x.tensor_type().elem_type(), dims);
  return true;
}

// The output type of a node that inference left open, where this node's kind is one libonnx
// cannot see through and its inputs are known; false where it gives none:
//  - an op that keeps its input's shape and type (Mish and GroupNormalization, opset 18's;
//    Gelu, opset 20's; RMSNormalization, opset 23's; Debian's ONNX 1.12 knows opsets up to 17);
//  - Einsum (libonnx infers its rank only): its labels' sizes (einsum_equation.hpp); an
//    equation refused there is left for the engine to refuse by name;
//  - OneHot (libonnx does not read the depth): the indices' shape with a constant depth
//    inserted at the axis.
bool open_type(const onnx::NodeProto& n, const std::map<std::string, onnx::TypeProto>& typed,
               const std::map<std::string, const onnx::TensorProto*>& constants, onnx::TypeProto& out) {
  static const std::set<std::string> keeping = {"Mish",
                                                "Gelu",
                                                "Celu",
                                                "Selu",
                                                "Elu",
                                                "Relu",
                                                "LeakyRelu",
                                                "HardSwish",
                                                "HardSigmoid",
                                                "Softplus",
                                                "Softsign",
                                                "ThresholdedRelu",
                                                "Sigmoid",
                                                "Tanh",
                                                "Sin",
                                                "Cos",
                                                "Tan",
                                                "Asin",
                                                "Acos",
                                                "Atan",
                                                "Sinh",
                                                "Cosh",
                                                "Asinh",
                                                "Acosh",
                                                "Atanh",
                                                "Abs",
                                                "Neg",
                                                "Exp",
                                                "Log",
                                                "Sqrt",
                                                "Erf",
                                                "Round",
                                                "Sign",
                                                "Reciprocal",
                                                "Floor",
                                                "Ceil",
                                                "Identity",
                                                "GroupNormalization",
                                                "RMSNormalization",
                                                "LayerNormalization",
                                                "InstanceNormalization",
                                                "Shrink",
                                                "ImageScaler",
                                                "ScaledTanh",
                                                "Affine",
                                                "ParametricSoftplus"};
  std::vector<const onnx::TypeProto*> in;
  for (const auto& name : n.input()) {
    const auto t = typed.find(name);
    in.push_back(t != typed.end() && whole_shape(t->second) ? &t->second : nullptr);
  }
  if (keeping.count(n.op_type())) {
    if (in.empty() || !in[0]) return false;
    out = *in[0];
    return true;
  }
  if (n.op_type() == "Einsum") {
    std::vector<std::vector<std::int64_t>> shapes;
    for (const auto* t : in) {
      if (!t) return false;
      shapes.push_back(dims_of(*t));
    }
    try {
      out = tensor_type(in.front()->tensor_type().elem_type(),
                        einsum_output_shape(einsum_labels(string_attr(n, "equation"), shapes)));
    } catch (const Error&) {
      return false;
    }
    return true;
  }
  if (n.op_type() == "Squeeze" && in.size() == 1 && in[0] && !has_attr(n, "axes")) {
    // No axes: every dim of size 1 goes (libonnx 1.12 leaves the shape open).
    std::vector<std::int64_t> dims = dims_of(*in[0]);
    std::erase(dims, 1);
    out = tensor_type(in[0]->tensor_type().elem_type(), dims);
    return true;
  }
  if (n.op_type() == "Reshape" && in.size() == 1 && in[0] && has_attr(n, "shape")) {
    // Opset 1's Reshape, its shape an attribute (libonnx infers none): 0 keeps the input's
    // dim, -1 takes what remains.
    const std::vector<std::int64_t> from = dims_of(*in[0]);
    std::vector<std::int64_t> dims = ints_attr(n, "shape");
    std::int64_t known = 1, total = 1, open = -1;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == 0 && i < from.size()) dims[i] = from[i];
      if (dims[i] == -1 && open < 0)
        open = std::int64_t(i);
      else if (dims[i] > 0)
        known *= dims[i];
      else
        return false;
    }
    for (std::int64_t d : from) total *= d;
    if (open >= 0 && (known == 0 || total % known != 0)) return false;
    if (open >= 0) dims[std::size_t(open)] = total / known;
    out = tensor_type(in[0]->tensor_type().elem_type(), dims);
    return true;
  }
  if (n.op_type() == "Resize" && !in.empty() && in[0]) return resize_type(n, *in[0], constants, out);
  if (n.op_type() == "OneHot" && in.size() == 3 && in[0]) {
    const auto depth = constants.find(n.input(1)), values = constants.find(n.input(2));
    std::int64_t d = 0;
    if (depth == constants.end() || values == constants.end() || !whole_constant(*depth->second, d) || d < 1) {
      return false;
    }
    std::vector<std::int64_t> dims = dims_of(*in[0]);
    const std::int64_t rank = std::int64_t(dims.size()) + 1;
    std::int64_t axis = int_attr(n, "axis", -1);  // OneHot's default: the last
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return false;
    dims.insert(dims.begin() + axis, d);
    out = tensor_type(values->second->data_type(), dims);
    return true;
  }
  return false;
}

// The output types of a Split that inference left open (opset 18's num_outputs, which
// Debian's ONNX 1.12 does not read): with no sizes given, the input's axis cut into as many
// parts as num_outputs says (or as there are outputs), each ceil(size / parts) and the last
// what remains, as opset 18 defines it. False where the sizes are given or the input unknown.
bool open_split_types(const onnx::NodeProto& n, const std::map<std::string, onnx::TypeProto>& typed,
                      std::vector<onnx::TypeProto>& out) {
  if (n.op_type() != "Split" || n.input_size() < 1 || (n.input_size() > 1 && !n.input(1).empty())) return false;
  if (has_attr(n, "split")) return false;
  const auto in = typed.find(n.input(0));
  if (in == typed.end() || !whole_shape(in->second)) return false;
  std::vector<std::int64_t> dims = dims_of(in->second);
  const auto rank = std::int64_t(dims.size());
  std::int64_t axis = int_attr(n, "axis", 0);
  if (axis < 0) axis += rank;
  const std::int64_t parts = int_attr(n, "num_outputs", n.output_size());
  if (axis < 0 || axis >= rank || parts != n.output_size() || parts < 1) return false;
  const std::int64_t size = dims[std::size_t(axis)], chunk = (size + parts - 1) / parts;
  for (std::int64_t i = 0; i < parts; ++i) {
    dims[std::size_t(axis)] = std::clamp<std::int64_t>(size - i * chunk, 0, chunk);
    out.push_back(tensor_type(in->second.tensor_type().elem_type(), dims));
  }
  return true;
}

// Gives the types open_type and open_split_types find, a chain of them in one pass; the
// number given.
int give_open_types(onnx::GraphProto& g) {
  std::map<std::string, onnx::TypeProto> typed = known_types(g), given;
  std::map<std::string, const onnx::TensorProto*> constants;
  for (const auto& t : g.initializer()) constants[t.name()] = &t;
  auto known = [&](const std::string& name) {
    const auto t = typed.find(name);
    return t != typed.end() && whole_shape(t->second);
  };
  for (const auto& n : g.node()) {
    if (std::all_of(n.output().begin(), n.output().end(), known)) continue;
    std::vector<onnx::TypeProto> types(1);
    if (!(n.output_size() == 1 && open_type(n, typed, constants, types[0]))) {
      types.clear();
      if (!open_split_types(n, typed, types)) continue;
    }
    for (int i = 0; i < n.output_size(); ++i) typed[n.output(i)] = given[n.output(i)] = types[std::size_t(i)];
  }
  give_types(g, given);
  return int(given.size());
}

}  // namespace

bool float_values(const onnx::TensorProto& t, std::vector<float>& out) {
  if (t.data_type() != onnx::TensorProto::FLOAT) return false;
  if (t.has_raw_data()) {
    out.resize(t.raw_data().size() / sizeof(float));
    std::memcpy(out.data(), t.raw_data().data(), out.size() * sizeof(float));
  } else {
    out.assign(t.float_data().begin(), t.float_data().end());
  }
  return true;
}

bool integer_initializer_values(const onnx::TensorProto& t, std::vector<std::int64_t>& out) {
  if (t.dims_size() > 1) return false;
  if (t.has_raw_data()) {
    if (t.data_type() != onnx::TensorProto::INT64 || t.raw_data().size() % sizeof(std::int64_t) != 0) return false;
    out.resize(t.raw_data().size() / sizeof(std::int64_t));
    std::memcpy(out.data(), t.raw_data().data(), t.raw_data().size());
    return true;
  }
  if (t.data_type() == onnx::TensorProto::INT64)
    out.assign(t.int64_data().begin(), t.int64_data().end());
  else if (t.data_type() == onnx::TensorProto::INT32)
    out.assign(t.int32_data().begin(), t.int32_data().end());
  else
    return false;
  return true;
}

void infer_shapes_folding_shape_computations(onnx::ModelProto& model) {
  // Before IR 4 libonnx types only the initializers a graph also lists as inputs; ONNX Runtime
  // reads the others too, and so does the engine.
  if (model.ir_version() < 4) model.set_ir_version(4);
  // Each round folds what the last one's inference made known: a chain of shape arithmetic is
  // known whole in one round, but a Reshape's output shape only in the next, so a 12-layer
  // encoder takes a round per layer. Every round but the last folds something, so the node
  // count bounds them.
  for (int round = 0; round <= model.graph().node_size(); ++round) {
    ShapeData data = infer_with_data(model);
    propagate_integer_arithmetic(model.graph(), data);
    const int folded = fold_known_values(*model.mutable_graph(), data);
    const int given = give_open_types(*model.mutable_graph());
    if (folded + given == 0) return;
    drop_unused_nodes(*model.mutable_graph());
  }
  infer_with_data(model);
}

}  // namespace atvoss::frontend
