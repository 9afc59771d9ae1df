#include "execution/exec_graph.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.hpp"

namespace atvoss::execution {
namespace {

void add_once(std::vector<int>& v, int x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

// Builds the exec graph node by node of the frontend graph, in its (topological) order.
class Builder {
 public:
  Builder(const frontend::Graph& g, const std::function<NodeCost(int)>& cost) : g_(g), cost_(cost) {}

  ExecGraph build() {
    exec_of_.assign(g_.nodes().size(), -1);
    for (int i = 0; i < int(g_.nodes().size()); ++i) {
      const frontend::GraphNode& n = g_.nodes()[i];
      if (n.view) {
        alias_view(n);
      } else if (n.fused_into >= 0) {
        join(i, exec_of_.at(n.fused_into));
      } else {
        exec_of_[i] = int(nodes_.size());
        nodes_.push_back({n.name, n.op, cost_(i), {}, {}, training_tag(i)});
        join(i, exec_of_[i]);
      }
    }
    return finish();
  }

 private:
  struct Pending {
    std::string name, op;
    NodeCost cost;
    std::vector<int> reads, writes;  // tensor indices of g
    TrainingTag training;
  };

  // A forward kernel is its own layer; a backward one is its forward node's, which is the
  // kernel that node runs in (it may be fused into an earlier one); none where that node runs
  // no kernel of its own (a view).
  TrainingTag training_tag(int i) const {
    const frontend::GraphNode& n = g_.nodes()[i];
    if (!n.backward()) return {n.role, i};
    const int e = n.forward_node >= 0 ? exec_of_.at(n.forward_node) : -1;
    return {n.role, e >= 0 ? nodes_[e].training.layer : -1};
  }

  // A tensor's storage: itself, or through views the tensor they alias.
  int storage(int t) const {
    const auto it = alias_.find(t);
    return it == alias_.end() ? t : it->second;
  }

  void alias_view(const frontend::GraphNode& n) {
    int source = -1;
    for (int t : n.inputs) {
      if (!g_.tensors()[t].constant) {
        source = storage(t);
        break;
      }
    }
    for (int t : n.outputs) {
      if (source >= 0)
        alias_[t] = source;  // a view of constants is a constant: no buffer
      else
        constant_views_.insert(t);
    }
  }

  // Graph node i runs in exec node e: it reads what e does not write, and writes its outputs.
  void join(int i, int e) {
    exec_of_[i] = e;
    Pending& p = nodes_[e];
    for (int t : g_.nodes()[i].inputs) {
      if (g_.tensors()[t].constant || constant_views_.count(t)) continue;
      const int s = storage(t);
      if (std::find(p.writes.begin(), p.writes.end(), s) != p.writes.end()) {
        internal_.insert(s);  // read inside the kernel that wrote it
      } else {
        add_once(p.reads, s);
      }
    }
    for (int t : g_.nodes()[i].outputs) add_once(p.writes, t);
  }

  ExecGraph finish() {
    // A tensor read only inside its kernel, and not a graph output, never reaches memory.
    std::map<int, int> external_reads;
    for (const auto& p : nodes_) {
      for (int t : p.reads) external_reads[t] += 1;
    }
    ExecGraph out;
    std::map<int, int> buffer_of;
    auto buffer = [&](int t) {
      if (const auto it = buffer_of.find(t); it != buffer_of.end()) return it->second;
      const frontend::GraphTensor& gt = g_.tensors()[t];
      return buffer_of[t] = out.add_buffer(gt.name, std::int64_t(std::ceil(gt.bytes)), gt.output);
    };
    for (const auto& p : nodes_) {
      std::vector<int> reads, writes;
      for (int t : p.reads) reads.push_back(buffer(t));
      for (int t : p.writes) {
        if (internal_.count(t) && !external_reads.count(t) && !g_.tensors()[t].output) continue;
        writes.push_back(buffer(t));
      }
      out.add_node(p.name, p.op, p.cost, reads, writes, p.training);
    }
    return out;
  }

  const frontend::Graph& g_;
  const std::function<NodeCost(int)>& cost_;
  std::vector<int> exec_of_;
  std::vector<Pending> nodes_;
  std::map<int, int> alias_;
  std::set<int> constant_views_, internal_;
};

}  // namespace

ExecGraph ExecGraph::from_graph(const frontend::Graph& g, const std::function<NodeCost(int)>& cost) {
  return Builder(g, cost).build();
}

int ExecGraph::add_buffer(std::string name, std::int64_t bytes, bool output) {
  ExecBuffer b;
  b.name = std::move(name);
  b.bytes = bytes;
  b.output = output;
  buffers_.push_back(std::move(b));
  return int(buffers_.size()) - 1;
}

int ExecGraph::add_node(std::string name, std::string op, NodeCost cost, const std::vector<int>& reads,
                        const std::vector<int>& writes, TrainingTag training) {
  if (cost.device < 0)
    throw_bad_input("exec graph: node '" + name + "' is placed on device " + std::to_string(cost.device));
  const int id = int(nodes_.size());
  ExecNode n{std::move(name), std::move(op), cost, reads, writes, {}, {}, training};
  for (int b : reads) {
    ExecBuffer& buf = buffers_.at(b);
    add_once(buf.consumers, id);
    if (buf.producer >= 0 && buf.producer != id) {
      add_once(n.preds, buf.producer);
      add_once(nodes_[buf.producer].succs, id);
    }
  }
  for (int b : writes) {
    ExecBuffer& buf = buffers_.at(b);
    if (buf.producer >= 0) throw_bad_input("exec graph: buffer '" + buf.name + "' written twice");
    buf.producer = id;
  }
  nodes_.push_back(std::move(n));
  return id;
}

double ExecGraph::serial_us() const {
  double total = 0;
  for (const auto& n : nodes_) total += n.cost.time_us;
  return total;
}

}  // namespace atvoss::execution
