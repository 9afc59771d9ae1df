#include "execution/pipeline.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace atvoss::execution {
std::vector<int> split_stages(const ExecGraph& g, int stages) {
  if (stages < 1) throw_bad_input("pipeline: stages must be >= 1");
  double total = 0;
  for (const auto& n : g.nodes()) total += n.cost.device_us();
  std::vector<int> stage(g.nodes().size(), 0);
  double before = 0;
  for (std::size_t i = 0; i < g.nodes().size(); ++i) {
    // The stage whose share of the total the node's midpoint falls in.
    const double mid = before + g.nodes()[i].cost.device_us() / 2;
    stage[i] = total > 0 ? std::min(stages - 1, int(mid / total * stages)) : int(i * stages / g.nodes().size());
    if (i > 0) stage[i] = std::max(stage[i], stage[i - 1]);  // consecutive runs
    before += g.nodes()[i].cost.device_us();
  }
  return stage;
}

ExecGraph pipelined(const ExecGraph& g, int stages, int micro_batches, const MicroBatchCost& micro_cost) {
  if (micro_batches < 1) throw_bad_input("pipeline: micro_batches must be >= 1");
  const std::vector<int> stage = split_stages(g, stages);
  const int n = int(g.nodes().size());
  std::vector<NodeCost> cost;  // of each node at the micro-batch
  for (int i = 0; i < n; ++i) {
    std::optional<NodeCost> c;
    if (micro_cost && micro_batches > 1) c = micro_cost(i, micro_batches);
    if (!c) c = g.nodes()[i].cost.share(1.0 / micro_batches);
    cost.push_back(*c);
  }
  ExecGraph out;
  // done[mb][s]: a token written when stage s of micro-batch mb has finished.
  std::vector<std::vector<int>> done(micro_batches, std::vector<int>(stages, -1));
  for (int mb = 0; mb < micro_batches; ++mb) {
    const std::string tag = micro_batches > 1 ? "#" + std::to_string(mb) : "";
    std::vector<int> buffer(g.buffers().size(), -1);
    auto buffer_of = [&](int b) {
      if (buffer[b] < 0) {
        const ExecBuffer& src = g.buffers()[b];
        buffer[b] = out.add_buffer(src.name + tag, (src.bytes + micro_batches - 1) / micro_batches, src.output);
      }
      return buffer[b];
    };
    std::vector<std::vector<int>> stage_tokens(stages);
    for (int i = 0; i < n; ++i) {
      const ExecNode& node = g.nodes()[i];
      const int s = stage[i];
      std::vector<int> reads, writes;
      for (int b : node.reads) reads.push_back(buffer_of(b));
      for (int b : node.writes) writes.push_back(buffer_of(b));
      // One micro-batch at a time per stage; two buffers per boundary.
      if (mb >= 1 && done[mb - 1][s] >= 0) reads.push_back(done[mb - 1][s]);
      if (mb >= 2 && s + 1 < stages && done[mb - 2][s + 1] >= 0) reads.push_back(done[mb - 2][s + 1]);
      const int token = out.add_buffer(node.name + tag + ":done", 0);
      writes.push_back(token);
      stage_tokens[s].push_back(token);
      out.add_node(node.name + tag, node.op, cost[i], reads, writes);
    }
    for (int s = 0; s < stages; ++s) {  // a zero-time barrier per stage and micro-batch
      if (stage_tokens[s].empty()) continue;
      done[mb][s] = out.add_buffer("stage" + std::to_string(s) + tag + ":done", 0);
      out.add_node("stage" + std::to_string(s) + tag, "StageBarrier", NodeCost{0, 0, 1, Unit::vector}, stage_tokens[s],
                   {done[mb][s]});
    }
  }
  return out;
}

}  // namespace atvoss::execution
