#include "distributed/tensor_parallel.hpp"

#include <algorithm>
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

std::vector<int> splittable_of(const execution::ExecGraph& g, const TrainingRoles& r) {
  std::set<int> split;
  for (int i = 0; i < int(g.nodes().size()); ++i) {
    const int f = r.forward[i];
    if (r.role[i] == Role::weight_grad && f >= 0 && is_matmul(g.nodes()[f].op)) split.insert(f);
  }
  return {split.begin(), split.end()};
}

// Builds rank 0's step: split kernels at 1/t, each followed by its collective, chunked when
// fused.
class Splitter {
 public:
  Splitter(const execution::ExecGraph& g, const Topology& t, const std::vector<int>& group, int chunks,
           TrainingRoles roles, const std::vector<int>& split)
      : g_(g),
        t_(t),
        group_(group),
        chunks_(std::max(1, chunks)),
        roles_(std::move(roles)),
        split_(split.begin(), split.end()) {}

  execution::ExecGraph build() {
    for (int b = 0; b < int(g_.buffers().size()); ++b) {
      const auto& buf = g_.buffers()[b];
      const bool shard = buf.producer >= 0 && is_split(buf.producer) && roles_.role[buf.producer] == Role::weight_grad;
      a_.buffer(buf.name, shard ? std::int64_t(double(buf.bytes) / ways()) : buf.bytes, buf.output);
    }
    for (int i = 0; i < int(g_.nodes().size()); ++i) {
      const auto& n = g_.nodes()[i];
      if (split_.count(i))
        kernel_with_collective(i, Collective::all_gather, "AllGather");
      else if (is_split(i) && roles_.role[i] == Role::data_grad)
        kernel_with_collective(i, Collective::all_reduce, "AllReduce");
      else
        a_.node(n.name, n.op, share(n.cost, is_split(i) ? ways() : 1), reads_of(n), n.writes, n.training);
    }
    return a_.build();
  }

 private:
  double ways() const { return double(group_.size()); }
  bool is_split(int i) const { return roles_.forward[i] >= 0 && split_.count(roles_.forward[i]) > 0; }

  // 1/parts of the kernel; a chunk after the first pays no launch of its own.
  static execution::NodeCost share(const execution::NodeCost& whole, double parts, bool launch = true) {
    execution::NodeCost c = whole.share(1.0 / parts);
    if (!launch) {
      c.time_us -= c.launch_us;
      c.launch_us = 0;
    }
    return c;
  }

  std::vector<int> reads_of(const execution::ExecNode& n) {
    std::vector<int> reads;
    for (int b : n.reads) {
      const auto it = whole_.find(b);
      if (it == whole_.end())
        reads.push_back(b);
      else
        reads.insert(reads.end(), it->second.begin(), it->second.end());
    }
    return reads;
  }

  // Kernel i at 1/t in chunks (one launch), chunk k's collective after chunk k; named
  // "<kernel>@<collective>", "#k" after it for chunk k > 0. Chunks and collectives carry the
  // kernel's training tag: they belong to its layer (training_roles.hpp).
  void kernel_with_collective(int i, Collective c, const std::string& op) {
    const auto& n = g_.nodes()[i];
    const std::vector<int> reads = reads_of(n);
    int previous = -1;
    for (int k = 0; k < chunks_; ++k) {
      // Chunk 0 keeps the kernel's name, the others "<kernel>@chunk<k>": all of its layer.
      const std::string tag = k > 0 ? "#" + std::to_string(k) : "";
      std::vector<int> writes, chunk_reads = reads;
      if (previous >= 0) chunk_reads.push_back(previous);
      for (int b : n.writes) {
        writes.push_back(
            chunks_ > 1 ? a_.buffer(g_.buffers()[b].name + "#" + std::to_string(k), g_.buffers()[b].bytes / chunks_)
                        : b);
      }
      a_.node(k > 0 ? n.name + "@chunk" + std::to_string(k) : n.name, n.op, share(n.cost, ways() * chunks_, k == 0),
              chunk_reads, writes, n.training);
      previous = writes.front();
      for (std::size_t w = 0; w < writes.size(); ++w) {
        const std::int64_t bytes = g_.buffers()[n.writes[w]].bytes / chunks_;
        const int out = a_.buffer(g_.buffers()[n.writes[w]].name + "@" + to_string(c) + tag, bytes);
        a_.node(n.name + "@" + to_string(c) + tag, op,
                {best_collective(t_, c, group_, bytes).us, 0, 1, execution::Unit::comm}, {writes[w]}, {out},
                n.training);
        whole_[n.writes[w]].push_back(out);
      }
    }
  }

  const execution::ExecGraph& g_;
  const Topology& t_;
  const std::vector<int>& group_;
  int chunks_;
  TrainingRoles roles_;
  std::set<int> split_;
  GraphAssembly a_;
  std::map<int, std::vector<int>> whole_;  // a split kernel's output -> its collectives' results
};

}  // namespace

std::vector<int> splittable_matmuls(const execution::ExecGraph& g) { return splittable_of(g, training_roles(g)); }

execution::ExecGraph tensor_parallel(const execution::ExecGraph& g, const Topology& t, const std::vector<int>& group,
                                     int overlap_chunks, const std::vector<int>* only) {
  if (group.size() <= 1) return g;
  for (int d : group) {
    if (d < 0 || d >= t.devices())
      throw_bad_input("tensor parallel: device " + std::to_string(d) + " is not in '" + t.name + "'");
  }
  TrainingRoles roles = training_roles(g);
  const std::vector<int> all = splittable_of(g, roles);
  if (only) {
    for (int f : *only) {
      if (std::find(all.begin(), all.end(), f) == all.end()) {
        throw_bad_input("tensor parallel: node " + std::to_string(f) + " is not a matmul with a weight gradient");
      }
    }
  }
  return Splitter(g, t, group, overlap_chunks, std::move(roles), only ? *only : all).build();
}

}  // namespace atvoss::distributed
