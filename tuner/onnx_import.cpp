// ONNX task extraction. Read first: import_onnx() (load, bind dims, infer shapes),
// then GraphIndex (tensor shapes, constants, consumers) and the per-op extractors
// (conv_task, matmul_task, gemm_task), which all end in follow_chain().
#include "tuner/onnx_import.hpp"

#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "core/error.hpp"

namespace atvoss::tuner {
namespace {

using Shape = std::vector<std::int64_t>;

struct GraphIndex {
  std::map<std::string, Shape> shapes;  // only tensors whose dims are all known
  std::map<std::string, int> elem_types;
  std::set<std::string> constants;      // initializers and Constant outputs
  std::map<std::string, std::vector<int>> consumers;
  std::set<std::string> graph_outputs;
};

void index_value(GraphIndex& g, const onnx::ValueInfoProto& v) {
  if (!v.type().has_tensor_type()) return;
  const auto& t = v.type().tensor_type();
  g.elem_types[v.name()] = t.elem_type();
  if (!t.has_shape()) return;
  Shape s;
  for (const auto& d : t.shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() <= 0) return;
    s.push_back(d.dim_value());
  }
  g.shapes[v.name()] = s;
}

GraphIndex index_graph(const onnx::GraphProto& graph) {
  GraphIndex g;
  for (const auto& v : graph.input()) index_value(g, v);
  for (const auto& v : graph.value_info()) index_value(g, v);
  for (const auto& v : graph.output()) {
    index_value(g, v);
    g.graph_outputs.insert(v.name());
  }
  for (const auto& init : graph.initializer()) {
    g.constants.insert(init.name());
    g.elem_types[init.name()] = init.data_type();
    g.shapes[init.name()] = Shape(init.dims().begin(), init.dims().end());
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    if (node.op_type() == "Constant") {
      for (const auto& o : node.output()) g.constants.insert(o);
    }
    for (const auto& in : node.input()) {
      if (!in.empty()) g.consumers[in].push_back(i);
    }
  }
  return g;
}

std::int64_t int_attr(const onnx::NodeProto& n, const std::string& name, std::int64_t fallback) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

std::vector<std::int64_t> ints_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

std::string str_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.s();
  }
  return {};
}

bool all_equal(const std::vector<std::int64_t>& v, std::int64_t value) {
  for (auto x : v) {
    if (x != value) return false;
  }
  return true;
}

std::int64_t product(Shape::const_iterator b, Shape::const_iterator e) {
  std::int64_t p = 1;
  for (; b != e; ++b) p *= *b;
  return p;
}

class Extractor {
 public:
  Extractor(const onnx::GraphProto& graph, const OnnxImportOptions& options, TaskSet& out)
      : graph_(graph), index_(index_graph(graph)), options_(options), out_(out),
        consumed_(graph.node_size(), false) {}

  void run() {
    for (int i = 0; i < graph_.node_size(); ++i) {
      if (consumed_[i]) continue;
      consumed_[i] = true;
      const auto& node = graph_.node(i);
      const std::string& op = node.op_type();
      std::optional<std::string> why_not;
      if (op == "Conv") {
        why_not = conv_task(node);
      } else if (op == "MatMul") {
        why_not = matmul_task(node);
      } else if (op == "Gemm") {
        why_not = gemm_task(node);
      } else if (op == "Softmax" || op == "LayerNormalization") {
        why_not = row_task(node);
      } else {
        why_not = op;
      }
      if (why_not) out_.add_unsupported(*why_not);
    }
  }

 private:
  std::string node_name(const onnx::NodeProto& n) const {
    return n.name().empty() ? n.op_type() + ":" + n.output(0) : n.name();
  }

  const Shape* shape_of(const std::string& tensor) const {
    auto it = index_.shapes.find(tensor);
    return it == index_.shapes.end() ? nullptr : &it->second;
  }

  DType dtype_of(const std::string& tensor) const {
    auto it = index_.elem_types.find(tensor);
    if (it == index_.elem_types.end()) return options_.float_dtype;
    switch (it->second) {
      case onnx::TensorProto::FLOAT16: return DType::float16;
      case onnx::TensorProto::BFLOAT16: return DType::bfloat16;
      case onnx::TensorProto::INT8:
      case onnx::TensorProto::UINT8: return DType::int8;
      default: return options_.float_dtype;
    }
  }

  // The single node reading tensor, unless it is read twice, is a graph output,
  // or was already taken by another chain.
  std::optional<int> sole_consumer(const std::string& tensor) const {
    if (index_.graph_outputs.count(tensor)) return std::nullopt;
    auto it = index_.consumers.find(tensor);
    if (it == index_.consumers.end() || it->second.size() != 1) return std::nullopt;
    if (consumed_[it->second.front()]) return std::nullopt;
    return it->second.front();
  }

  // Walks the ops after a main op that a fused kernel could run on its output
  // tile, marking them consumed. conv_like decides whether batchnorm or
  // layernorm may join.
  std::vector<std::string> follow_chain(std::string tensor, std::vector<std::string> chain,
                                        bool conv_like) {
    auto has = [&](const std::string& e) {
      return std::find(chain.begin(), chain.end(), e) != chain.end();
    };
    while (auto next = sole_consumer(tensor)) {
      const auto& n = graph_.node(*next);
      std::string step;
      const std::string& op = n.op_type();
      if (op == "BatchNormalization" && conv_like && chain.empty()) step = "batchnorm";
      else if (op == "Relu") step = "relu";
      else if (op == "Gelu") step = "gelu";
      else if (op == "LayerNormalization" && !conv_like && int_attr(n, "axis", -1) == -1) {
        step = "layernorm";
      } else if (op == "Add" && n.input_size() == 2) {
        const std::string& other = n.input(0) == tensor ? n.input(1) : n.input(0);
        step = index_.constants.count(other) && !has("bias") && !has("add") ? "bias" : "add";
      }
      if (step.empty() || has(step)) break;
      chain.push_back(step);
      consumed_[*next] = true;
      tensor = n.output(0);
    }
    return chain;
  }

  void add_task(const Json& workload, const onnx::NodeProto& node) {
    out_.add(Workload::from_json(workload), node_name(node));
  }

  std::optional<std::string> conv_task(const onnx::NodeProto& node) {
    const Shape* x = node.input_size() >= 2 ? shape_of(node.input(0)) : nullptr;
    const Shape* w = x ? shape_of(node.input(1)) : nullptr;
    if (!x || !w || x->size() != 4 || w->size() != 4) return "Conv (unknown or non-2D shape)";
    const auto group = int_attr(node, "group", 1);
    const auto strides = ints_attr(node, "strides");
    const auto pads = ints_attr(node, "pads");
    const auto dilations = ints_attr(node, "dilations");
    const std::int64_t stride = strides.empty() ? 1 : strides[0];
    if (!all_equal(strides, stride) || !all_equal(dilations, 1)) {
      return "Conv (dilated or uneven stride)";
    }
    const std::int64_t r = (*w)[2], s = (*w)[3];
    std::int64_t pad = pads.empty() ? 0 : pads[0];
    const std::string auto_pad = str_attr(node, "auto_pad");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") pad = (r - 1) / 2;
    if (!all_equal(pads, pad)) return "Conv (uneven padding)";
    const std::int64_t c = (*x)[1], k = (*w)[0];
    std::string op = "conv2d";
    if (group != 1) {
      if (group != c || k != c || (*w)[1] != 1) return "Conv (grouped)";
      op = "depthwise_conv2d";
    }
    Json dims{{"N", (*x)[0]}, {"C", c}, {"H", (*x)[2]}, {"W", (*x)[3]}, {"R", r}, {"S", s},
              {"stride", stride}, {"pad", pad}};
    if (op == "conv2d") dims["K"] = k;
    std::vector<std::string> start;
    if (node.input_size() >= 3 && !node.input(2).empty()) start.push_back("bias");
    const auto chain = follow_chain(node.output(0), start, true);
    add_task(Json{{"op", op}, {"dtype", to_string(dtype_of(node.input(0)))}, {"dims", dims},
                  {"epilogue", chain}},
             node);
    return std::nullopt;
  }

  std::optional<std::string> matmul_task(const onnx::NodeProto& node) {
    const Shape* a = node.input_size() == 2 ? shape_of(node.input(0)) : nullptr;
    const Shape* b = a ? shape_of(node.input(1)) : nullptr;
    if (!a || !b || a->size() < 2 || b->size() < 2) return "MatMul (unknown or 1-D shape)";
    const std::int64_t k = a->back(), n = b->back();
    if ((*b)[b->size() - 2] != k) return "MatMul (mismatched K)";
    const auto chain = follow_chain(node.output(0), {}, false);
    Json j{{"dtype", to_string(dtype_of(node.input(0)))}, {"epilogue", chain}};
    if (b->size() == 2) {
      // A weight matrix: every leading dim of A is just more rows.
      j["op"] = "matmul";
      j["dims"] = {{"M", product(a->begin(), a->end() - 1)}, {"N", n}, {"K", k}};
    } else {
      const std::int64_t batch = product(b->begin(), b->end() - 2);
      if (product(a->begin(), a->end() - 2) != batch) return "MatMul (broadcast batch)";
      j["op"] = "batch_matmul";
      j["dims"] = {{"B", batch}, {"M", (*a)[a->size() - 2]}, {"N", n}, {"K", k}};
    }
    add_task(j, node);
    return std::nullopt;
  }

  std::optional<std::string> gemm_task(const onnx::NodeProto& node) {
    const Shape* a = node.input_size() >= 2 ? shape_of(node.input(0)) : nullptr;
    const Shape* b = a ? shape_of(node.input(1)) : nullptr;
    if (!a || !b || a->size() != 2 || b->size() != 2) return "Gemm (unknown shape)";
    const bool ta = int_attr(node, "transA", 0) != 0, tb = int_attr(node, "transB", 0) != 0;
    const std::int64_t m = ta ? (*a)[1] : (*a)[0], k = ta ? (*a)[0] : (*a)[1];
    const std::int64_t n = tb ? (*b)[0] : (*b)[1];
    std::vector<std::string> start;
    if (node.input_size() >= 3 && !node.input(2).empty()) start.push_back("bias");
    const auto chain = follow_chain(node.output(0), start, false);
    add_task(Json{{"op", "matmul"}, {"dtype", to_string(dtype_of(node.input(0)))},
                  {"dims", {{"M", m}, {"N", n}, {"K", k}}}, {"epilogue", chain}},
             node);
    return std::nullopt;
  }

  std::optional<std::string> row_task(const onnx::NodeProto& node) {
    const Shape* x = shape_of(node.input(0));
    const auto axis = int_attr(node, "axis", -1);
    if (!x || x->empty() || (axis != -1 && axis != std::int64_t(x->size()) - 1)) {
      return node.op_type() + " (unknown shape or inner axis)";
    }
    const std::string op = node.op_type() == "Softmax" ? "softmax" : "layernorm";
    add_task(Json{{"op", op}, {"dtype", to_string(dtype_of(node.input(0)))},
                  {"dims", {{"M", product(x->begin(), x->end() - 1)}, {"N", x->back()}}}},
             node);
    return std::nullopt;
  }

  const onnx::GraphProto& graph_;
  GraphIndex index_;
  OnnxImportOptions options_;
  TaskSet& out_;
  std::vector<bool> consumed_;
};

onnx::ModelProto read_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_bad_input("model: cannot read ONNX file '" + path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes) || !model.has_graph()) {
    throw_bad_input("model: '" + path + "' is not an ONNX model (protobuf parse failed or no graph)");
  }
  return model;
}

void bind_symbolic_dims(onnx::ModelProto& model, int batch) {
  for (auto& input : *model.mutable_graph()->mutable_input()) {
    if (!input.type().has_tensor_type()) continue;
    auto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (auto& d : *shape->mutable_dim()) {
      if (!d.has_dim_value()) d.set_dim_value(batch);
    }
  }
}

}  // namespace

TaskSet import_onnx(const std::string& path, const OnnxImportOptions& options) {
  if (options.batch < 1) throw_bad_input("onnx import: batch must be >= 1");
  onnx::ModelProto model = read_model(path);
  bind_symbolic_dims(model, options.batch);
  try {
    onnx::shape_inference::InferShapes(model);
  } catch (const std::exception& e) {
    throw_bad_input("model: shape inference failed on '" + path + "': " + e.what());
  }
  std::string name = model.graph().name();
  if (name.empty()) name = path;
  TaskSet set(name, options.batch);
  Extractor(model.graph(), options, set).run();
  return set;
}

}  // namespace atvoss::tuner
