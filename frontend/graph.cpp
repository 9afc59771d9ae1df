#include "frontend/graph.hpp"

#include "core/error.hpp"

namespace atvoss::frontend {

int Graph::add_tensor(const std::string& name, std::vector<std::int64_t> shape, double bytes, bool constant,
                      std::string dtype) {
  if (const auto it = by_name_.find(name); it != by_name_.end()) return it->second;
  GraphTensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = std::move(dtype);
  t.bytes = bytes;
  t.constant = constant;
  tensors_.push_back(std::move(t));
  return by_name_[name] = int(tensors_.size()) - 1;
}

int Graph::add_node(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                    const std::vector<std::string>& outputs) {
  const int id = int(nodes_.size());
  GraphNode node;  // what the frontend made of it is filled in by its caller
  node.name = name;
  node.op = op;
  for (const auto& in : inputs) {
    if (in.empty()) continue;  // an optional input left out
    const int t = add_tensor(in);
    tensors_[t].consumers.push_back(id);
    node.inputs.push_back(t);
  }
  for (const auto& out : outputs) {
    if (out.empty()) continue;
    const int t = add_tensor(out);
    if (tensors_[t].producer >= 0) {
      throw_bad_input("model: tensor '" + out + "' is produced by both '" + nodes_[tensors_[t].producer].name +
                      "' and '" + name + "'");
    }
    tensors_[t].producer = id;
    node.outputs.push_back(t);
  }
  node_by_name_.emplace(name, id);
  nodes_.push_back(std::move(node));
  return id;
}

void Graph::mark_output(const std::string& name) { tensors_[add_tensor(name)].output = true; }

int Graph::tensor_index(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

int Graph::node_index(const std::string& name) const {
  const auto it = node_by_name_.find(name);
  return it == node_by_name_.end() ? -1 : it->second;
}

Json Graph::summary() const {
  std::size_t edges = 0;
  for (const auto& t : tensors_) edges += t.producer >= 0 ? t.consumers.size() : 0;
  int kernels = 0, fused = 0, views = 0, not_tuned = 0;
  Json fused_by = Json::object();
  for (const auto& n : nodes_) {
    if (n.fused_into >= 0) {
      ++fused;
      fused_by[n.fused_by] = fused_by.value(n.fused_by, 0) + 1;
    } else if (n.kernel)
      ++kernels;
    else if (n.view)
      ++views;
    else
      ++not_tuned;
  }
  return {{"nodes", nodes_.size()}, {"tensors", tensors_.size()},
          {"edges", edges},         {"kernels", kernels},
          {"fused", fused},         {"views", views},
          {"not_tuned", not_tuned}, {"fused_by", fused_by}};
}

}  // namespace atvoss::frontend
