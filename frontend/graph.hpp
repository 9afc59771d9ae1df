// Graph: the model's dataflow as the frontend read it, which the task set is derived from
// (task_set.hpp). A node is an op by the model's name; an edge is a tensor with its shape,
// bytes, one producer and its consumers. ONNX import fills it from the model file; a zoo
// model is a chain (each layer reads the output of the layer before it). What needs edges
// (the execution simulator of the graph: ready queue, liveness, memory planning) reads them
// here. Plain value type; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace atvoss::frontend {

struct GraphTensor {
  std::string name;
  std::vector<std::int64_t> shape;  // empty: unknown (or a scalar)
  double bytes = 0;                 // 0: shape unknown
  bool constant = false;            // an initializer or a constant subgraph's output
  int producer = -1;                // node index; -1: a graph input or an initializer
  std::vector<int> consumers;       // node indices, in model order
};

struct GraphNode {
  std::string name;
  std::string op;            // the model's op type, e.g. "Conv"
  std::vector<int> inputs;   // tensor indices
  std::vector<int> outputs;
};

class Graph {
 public:
  // The tensor named name, added with these facts if new (a known one keeps its own).
  int add_tensor(const std::string& name, std::vector<std::int64_t> shape = {}, double bytes = 0,
                 bool constant = false);
  // Adds a node reading and writing the named tensors (unknown names are added, facts unknown).
  // bad_input if an output already has a producer: every tensor has one.
  int add_node(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
               const std::vector<std::string>& outputs);

  const std::vector<GraphNode>& nodes() const { return nodes_; }
  const std::vector<GraphTensor>& tensors() const { return tensors_; }
  // Index of the tensor named name, or -1.
  int tensor_index(const std::string& name) const;
  bool empty() const { return nodes_.empty(); }
  // {"nodes", "tensors", "edges"}: counts, for --json (edges: producer-to-consumer pairs).
  Json summary() const;

 private:
  std::vector<GraphNode> nodes_;
  std::vector<GraphTensor> tensors_;
  std::map<std::string, int> by_name_;
};

}  // namespace atvoss::frontend
