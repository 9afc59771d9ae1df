// Graph as JSON: the model's dataflow (graph.hpp) written out and read back, so a graph can
// be built, inspected or fused outside C++ (the Python package's atvoss.Graph). The form:
//   {"tensors": [{"name", "shape": [ints], "dtype", "bytes", "constant", "output"}],
//    "nodes": [{"name", "op", "inputs": [tensor names], "outputs": [tensor names],
//               "kernel": workload JSON or null, "view", "reason", "attributes", "bytes",
//               "count", "step", "fused_into": node name or null, "fused_by"}]}
// Only "name" (tensors, nodes) and "op" (nodes) are required; the rest default as in
// graph.hpp. Node names are unique here (fused_into names one), node order is kept, and a
// tensor named by a node but not listed is added with its facts unknown.
#pragma once

#include "core/json.hpp"
#include "frontend/graph.hpp"

namespace atvoss::frontend {

Json graph_to_json(const Graph& g);

// bad_input naming the field (with the node or tensor) when malformed: a field of the
// wrong type, a duplicate node name, a tensor with two producers, fused_into naming no node.
Graph graph_from_json(const Json& j);

}  // namespace atvoss::frontend
