#include "distributed/training_roles.hpp"

#include <map>
#include <string>

namespace atvoss::distributed {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TrainingRoles training_roles(const execution::ExecGraph& g) {
  std::map<std::string, int> node_by_name, producer_by_buffer;
  for (int i = 0; i < int(g.nodes().size()); ++i) node_by_name.emplace(g.nodes()[i].name, i);
  for (const auto& b : g.buffers()) producer_by_buffer.emplace(b.name, b.producer);
  auto named = [&](const std::string& name) {
    const auto it = node_by_name.find(name);
    return it == node_by_name.end() ? -2 : it->second;
  };
  static const std::pair<const char*, Role> tails[] = {{".dgrad2", Role::data_grad},
                                                       {".dgrad", Role::data_grad},
                                                       {".wgrad", Role::weight_grad},
                                                       {".bgrad", Role::bias_grad},
                                                       {".update", Role::update}};
  TrainingRoles out;
  out.forward.resize(g.nodes().size());
  out.role.assign(g.nodes().size(), Role::backward);
  for (int i = 0; i < int(g.nodes().size()); ++i) {
    const std::string& name = g.nodes()[i].name;
    int f = -2;
    // A collective a plan added after kernel k ("<k>@allgather") has k's layer and role.
    if (const auto at = name.rfind('@'); at != std::string::npos) {
      const int k = named(name.substr(0, at));
      if (k >= 0 && k < i) {
        out.forward[i] = out.forward[k];
        out.role[i] = out.role[k];
        continue;
      }
    }
    if (name.rfind("grad_sum:", 0) == 0) {
      const auto it = producer_by_buffer.find(name.substr(9));
      f = it == producer_by_buffer.end() ? -1 : it->second;
    } else if (const auto at = name.rfind(".backward@"); at != std::string::npos) {
      f = named(name.substr(0, at));
    } else {
      for (const auto& [tail, role] : tails) {
        if (ends_with(name, tail)) f = named(name.substr(0, name.size() - std::string(tail).size()));
        if (f == -2) continue;
        out.role[i] = role;
        break;
      }
    }
    if (f == -2) out.role[i] = Role::forward;
    if (f == -2)
      out.forward[i] = i;
    else
      out.forward[i] = f < 0 ? -1 : (f < i ? out.forward[f] : f);  // forward nodes come first
  }
  return out;
}

}  // namespace atvoss::distributed
