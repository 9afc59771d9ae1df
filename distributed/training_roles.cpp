#include "distributed/training_roles.hpp"

#include <map>

namespace atvoss::distributed {

TrainingRoles training_roles(const execution::ExecGraph& g) {
  const auto& nodes = g.nodes();
  std::map<int, int> forward_of_layer;  // a layer's first forward kernel (later ones: its chunks)
  for (int i = 0; i < int(nodes.size()); ++i) {
    const execution::TrainingTag& t = nodes[i].training;
    if (t.role == frontend::TrainingRole::forward && t.layer >= 0) forward_of_layer.emplace(t.layer, i);
  }
  TrainingRoles out;
  out.forward.resize(nodes.size());
  out.role.resize(nodes.size());
  for (int i = 0; i < int(nodes.size()); ++i) {
    const execution::TrainingTag& t = nodes[i].training;
    out.role[i] = t.role;
    const auto it = t.layer >= 0 ? forward_of_layer.find(t.layer) : forward_of_layer.end();
    if (t.role == frontend::TrainingRole::forward)
      out.forward[i] = it == forward_of_layer.end() ? i : it->second;
    else
      out.forward[i] = it == forward_of_layer.end() ? -1 : it->second;
  }
  return out;
}

}  // namespace atvoss::distributed
