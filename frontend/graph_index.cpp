#include "frontend/internal/graph_index.hpp"

namespace atvoss::frontend {
namespace {

using Shape = std::vector<std::int64_t>;

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

}  // namespace

bool is_constant_node(const GraphIndex& g, const onnx::NodeProto& node) {
  if (node.op_type() == "Constant") return true;
  if (node.op_type() == "Shape") return node.input_size() > 0 && g.shapes.count(node.input(0)) > 0;
  bool any = false;
  for (const auto& in : node.input()) {
    if (in.empty()) continue;
    if (!g.constants.count(in)) return false;
    any = true;
  }
  return any;
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
    if (is_constant_node(g, node)) {
      for (const auto& o : node.output()) g.constants.insert(o);
    }
    for (const auto& in : node.input()) {
      if (!in.empty()) g.consumers[in].push_back(i);
    }
  }
  return g;
}

}  // namespace atvoss::frontend
