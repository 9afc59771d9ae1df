#include "distributed/graph_assembly.hpp"

#include <functional>
#include <queue>

#include "core/error.hpp"

namespace atvoss::distributed {

int GraphAssembly::buffer(std::string name, std::int64_t bytes, bool output) {
  buffers_.push_back({std::move(name), bytes, output, -1});
  return int(buffers_.size()) - 1;
}

int GraphAssembly::node(std::string name, std::string op, execution::NodeCost cost, std::vector<int> reads,
                        std::vector<int> writes, execution::TrainingTag training) {
  const int id = int(nodes_.size());
  for (int b : writes) {
    if (buffers_.at(b).producer >= 0)
      throw_bad_input("graph assembly: buffer '" + buffers_[b].name + "' written twice");
    buffers_[b].producer = id;
  }
  for (int b : reads) (void)buffers_.at(b);
  nodes_.push_back({std::move(name), std::move(op), cost, std::move(reads), std::move(writes), training});
  return id;
}

execution::ExecGraph GraphAssembly::build() const {
  const int n = int(nodes_.size());
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> succs(n);
  for (int i = 0; i < n; ++i) {
    for (int b : nodes_[i].reads) {
      const int p = buffers_[b].producer;
      if (p < 0 || p == i) continue;
      ++waiting[i];
      succs[p].push_back(i);
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push(i);
  }
  execution::ExecGraph out;
  for (const Buffer& b : buffers_) out.add_buffer(b.name, b.bytes, b.output);
  int emitted = 0;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    const Node& x = nodes_[i];
    out.add_node(x.name, x.op, x.cost, x.reads, x.writes, x.training);
    ++emitted;
    for (int s : succs[i]) {
      if (--waiting[s] == 0) ready.push(s);
    }
  }
  if (emitted < n) {
    for (int i = 0; i < n; ++i) {
      if (waiting[i] > 0)
        throw_bad_input("graph assembly: node '" + nodes_[i].name + "' never becomes ready: the graph has a cycle");
    }
  }
  return out;
}

}  // namespace atvoss::distributed
