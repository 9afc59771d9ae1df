// Graph: the model's dataflow as the frontend read it, which the task set is derived from
// (tasks_from_graph, task_set.hpp). A node is an op by the model's name with what the
// frontend made of it: its own kernel (a workload), or why it has none, or a view that moves
// no data; an edge is a tensor with its shape, bytes, one producer and its consumers. ONNX
// import fills it from the model file; a zoo model is a chain (each layer reads the output of
// the layer before it). The fusion pass (graph_fusion.hpp) then records which nodes run inside
// another node's kernel. What needs edges (the execution simulator of the graph: ready queue,
// liveness, memory planning) reads them here. Plain value type; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <optional>

#include "core/json.hpp"
#include "core/workload.hpp"

namespace atvoss::frontend {

struct GraphTensor {
  std::string name;
  std::vector<std::int64_t> shape;  // empty: unknown (or a scalar)
  std::string dtype;                // element type as the model names it ("float", "int64", ...); empty: unknown
  double bytes = 0;                 // 0: shape unknown (bytes as the target runs it: floats in the tuned dtype)
  bool constant = false;            // an initializer or a constant subgraph's output
  int producer = -1;                // node index; -1: a graph input or an initializer
  std::vector<int> consumers;       // node indices, in model order
  bool output = false;              // a graph output: read after the model runs, never fused away
};

// What a node of a training step is (training.hpp): the forward pass, or a part of a layer's
// backward pass (a data, weight or bias gradient, the weight update, or another backward node:
// a sum of gradients, the backward of a node not tuned).
enum class TrainingRole { forward, data_grad, weight_grad, bias_grad, update, backward };

struct GraphNode {
  std::string name;
  std::string op;           // the model's op type, e.g. "Conv"
  std::vector<int> inputs;  // tensor indices
  std::vector<int> outputs;
  // What the frontend made of it. A node with a kernel is a task (after fusion its epilogue
  // holds the ops fused into it); one without a kernel is a view (moves no data) or is not
  // tuned (reason says why: frontend/fallback.hpp times it from bytes).
  std::optional<Workload> kernel;
  bool view = false;
  std::string reason;
  Json attributes = Json::object();  // a node not tuned: the model's attributes, by name
  double bytes = 0;                  // bytes it reads and writes once (0: shapes unknown)
  int count = 1;                     // occurrences it stands for (a zoo layer repeated)
  // A training step's backward pass or weight update (training.hpp): its role, and the
  // forward node (graph index) whose layer it belongs to; -1 for the gradient of a graph input.
  TrainingRole role = TrainingRole::forward;
  int forward_node = -1;
  // The epilogue op it can be when it runs inside its producer's kernel (graph_fusion.hpp):
  // an activation's name, "add" (a two-input Add or Sum), "scale" (a two-input Mul or Div),
  // "batchnorm", "layernorm" (along the inner axis); empty: it never fuses.
  std::string step;
  int fused_into = -1;   // after the fusion pass: the node whose kernel runs it
  std::string fused_by;  // and the rule that fused it (graph_fusion.hpp)

  bool backward() const { return role != TrainingRole::forward; }
};

class Graph {
 public:
  // The tensor named name, added with these facts if new (a known one keeps its own).
  int add_tensor(const std::string& name, std::vector<std::int64_t> shape = {}, double bytes = 0, bool constant = false,
                 std::string dtype = "");
  // Adds a node reading and writing the named tensors (unknown names are added, facts unknown).
  // bad_input if an output already has a producer: every tensor has one.
  int add_node(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
               const std::vector<std::string>& outputs);

  // Marks the named tensor as a graph output (added if new).
  void mark_output(const std::string& name);

  const std::vector<GraphNode>& nodes() const { return nodes_; }
  GraphNode& node(int i) { return nodes_.at(i); }
  const std::vector<GraphTensor>& tensors() const { return tensors_; }
  // Index of the tensor named name, or -1.
  int tensor_index(const std::string& name) const;
  // Index of the first node named name, or -1.
  int node_index(const std::string& name) const;
  bool empty() const { return nodes_.empty(); }
  // {"nodes", "tensors", "edges", "kernels", "fused", "views", "not_tuned", "fused_by"}: counts,
  // for --json (edges: producer-to-consumer pairs; kernels: nodes that run a kernel of their
  // own; fused_by: nodes fused per rule of the fusion pass, graph_fusion.hpp).
  Json summary() const;

 private:
  std::vector<GraphNode> nodes_;
  std::vector<GraphTensor> tensors_;
  std::map<std::string, int> by_name_;
  std::map<std::string, int> node_by_name_;
};

}  // namespace atvoss::frontend
