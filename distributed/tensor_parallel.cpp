#include "distributed/tensor_parallel.hpp"

#include <map>
#include <set>
#include <string>

#include "core/error.hpp"
#include "distributed/collectives.hpp"
#include "distributed/graph_assembly.hpp"
#include "distributed/training_roles.hpp"

namespace atvoss::distributed {
namespace {

bool is_matmul(const std::string& op) { return op == "matmul" || op == "MatMul" || op == "Gemm"; }

}  // namespace

std::vector<int> splittable_matmuls(const execution::ExecGraph& g) {
  const TrainingRoles r = training_roles(g);
  std::set<int> split;
  for (int i = 0; i < int(g.nodes().size()); ++i) {
    const int f = r.forward[i];
    if (r.role[i] == Role::weight_grad && f >= 0 && is_matmul(g.nodes()[f].op)) split.insert(f);
  }
  return {split.begin(), split.end()};
}

execution::ExecGraph tensor_parallel(const execution::ExecGraph& g, const Topology& t, const std::vector<int>& group) {
  if (group.size() <= 1) return g;
  for (int d : group) {
    if (d < 0 || d >= t.devices()) throw_bad_input("tensor parallel: device " + std::to_string(d) + " is not in '" + t.name + "'");
  }
  const double ways = double(group.size());
  const TrainingRoles r = training_roles(g);
  const std::vector<int>& fwd = r.forward;
  const std::vector<int> list = splittable_matmuls(g);
  const std::set<int> split(list.begin(), list.end());
  auto is_split = [&](int i) { return fwd[i] >= 0 && split.count(fwd[i]) > 0; };
  GraphAssembly a;
  for (int b = 0; b < int(g.buffers().size()); ++b) {
    const auto& buf = g.buffers()[b];
    const bool shard = buf.producer >= 0 && is_split(buf.producer) && r.role[buf.producer] == Role::weight_grad;
    a.buffer(buf.name, shard ? std::int64_t(double(buf.bytes) / ways) : buf.bytes, buf.output);
  }
  std::map<int, int> whole;  // a split kernel's output -> the collective's result
  // Named "<kernel>@<collective>" (training_roles.hpp: it belongs to the kernel's layer).
  auto collective = [&](const std::string& kernel, Collective c, const std::string& op, int b) {
    const auto& buf = g.buffers()[b];
    const int out = a.buffer(buf.name + "@" + to_string(c), buf.bytes);
    const double us = best_collective(t, c, group, buf.bytes).us;
    a.node(kernel + "@" + to_string(c), op, {us, 0, 1, execution::Unit::comm}, {b}, {out});
    whole[b] = out;
  };
  for (int i = 0; i < int(g.nodes().size()); ++i) {
    const auto& n = g.nodes()[i];
    execution::NodeCost cost = n.cost;
    if (is_split(i)) cost.time_us = cost.device_us() / ways + cost.launch_us;
    std::vector<int> reads;
    for (int b : n.reads) reads.push_back(whole.count(b) ? whole[b] : b);
    a.node(n.name, n.op, cost, reads, n.writes);
    if (split.count(i)) {
      for (int b : n.writes) collective(n.name, Collective::all_gather, "AllGather", b);
    } else if (is_split(i) && r.role[i] == Role::data_grad) {
      for (int b : n.writes) collective(n.name, Collective::all_reduce, "AllReduce", b);
    }
  }
  return a.build();
}

}  // namespace atvoss::distributed
