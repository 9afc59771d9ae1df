// GraphIndex: what the ONNX import and its checks look up in a graph: the tensors' known shapes
// and element types, the constants (initializers and the outputs of nodes computable before
// the model runs), each tensor's consumers and the graph's outputs. Private to frontend/.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace atvoss::frontend {

struct GraphIndex {
  std::map<std::string, std::vector<std::int64_t>> shapes;  // only tensors whose dims are all known
  std::map<std::string, int> elem_types;
  std::set<std::string> constants;  // initializers and Constant outputs
  std::map<std::string, std::vector<int>> consumers;
  std::set<std::string> graph_outputs;
};

GraphIndex index_graph(const onnx::GraphProto& graph);

// A node whose outputs are known before the model runs: Constant, the shape of a tensor
// whose shape inference knows, or any node fed only by such values (ConstantOfShape,
// Unsqueeze of a constant, shape arithmetic). Nodes are topologically sorted, so one
// pass folds whole constant subgraphs; they are neither tasks nor reported.
bool is_constant_node(const GraphIndex& g, const onnx::NodeProto& node);

}  // namespace atvoss::frontend
