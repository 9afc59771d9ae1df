#include "distributed/pipeline_parallel.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

#include "core/error.hpp"
#include "distributed/collectives.hpp"
#include "distributed/graph_assembly.hpp"
#include "distributed/training_roles.hpp"

namespace atvoss::distributed {
namespace {

using execution::ExecGraph;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Bytes that cross a cut after each forward layer position: tensors made by a layer and read
// by a later one.
std::vector<double> cut_bytes(const ExecGraph& g, const std::vector<int>& layers, const std::vector<int>& position) {
  std::vector<double> diff(layers.size() + 1, 0);
  for (const auto& b : g.buffers()) {
    if (b.producer < 0 || position[b.producer] < 0) continue;
    int last = -1;
    for (int c : b.consumers) last = std::max(last, position[c]);
    if (last <= position[b.producer]) continue;
    diff[position[b.producer]] += double(b.bytes);
    diff[last] -= double(b.bytes);
  }
  std::vector<double> out(layers.size(), 0);
  double run = 0;
  for (std::size_t j = 0; j < layers.size(); ++j) out[j] = run += diff[j];
  return out;
}

struct Cuts {
  std::vector<int> first;  // first layer position of each stage
  double crossing = 0;
};

// Cuts of w (prefix sums, w[0] = 0) into s consecutive runs: the fewest crossing bytes among
// those whose slowest run is within 2 % of the best bottleneck.
Cuts best_cuts(const std::vector<double>& w, const std::vector<double>& cross, int s) {
  const int l = int(w.size()) - 1;
  std::vector<std::vector<double>> neck(s + 1, std::vector<double>(l + 1, kInf));
  neck[0][0] = 0;
  for (int k = 1; k <= s; ++k) {
    for (int i = k; i <= l; ++i) {
      for (int j = k - 1; j < i; ++j) neck[k][i] = std::min(neck[k][i], std::max(neck[k - 1][j], w[i] - w[j]));
    }
  }
  const double cap = neck[s][l] * 1.02 + 1e-9;
  std::vector<std::vector<double>> bytes(s + 1, std::vector<double>(l + 1, kInf));
  std::vector<std::vector<int>> from(s + 1, std::vector<int>(l + 1, -1));
  bytes[0][0] = 0;
  for (int k = 1; k <= s; ++k) {
    for (int i = k; i <= l; ++i) {
      for (int j = k - 1; j < i; ++j) {
        if (bytes[k - 1][j] == kInf || w[i] - w[j] > cap) continue;
        const double b = bytes[k - 1][j] + (j > 0 ? cross[j - 1] : 0);
        if (b < bytes[k][i]) {
          bytes[k][i] = b;
          from[k][i] = j;
        }
      }
    }
  }
  Cuts c;
  c.crossing = bytes[s][l];
  c.first.assign(s, 0);
  for (int k = s, i = l; k > 0; i = from[k][i], --k) c.first[k - 1] = from[k][i];
  return c;
}

// A stage's micro-batch phases in its schedule's order: (backward?, micro-batch).
std::vector<std::pair<bool, int>> stage_order(PipelineOrder o, int stage, int stages, int m) {
  std::vector<std::pair<bool, int>> out;
  const int warm = o == PipelineOrder::gpipe ? m : std::min(stages - stage - 1, m);
  for (int i = 0; i < warm; ++i) out.emplace_back(false, i);
  for (int i = 0; i < m - warm; ++i) {
    out.emplace_back(false, warm + i);
    out.emplace_back(true, i);
  }
  for (int i = m - warm; i < m; ++i) out.emplace_back(true, i);
  return out;
}

// Unrolls the step over micro-batches on the stages' devices.
class Unroller {
 public:
  Unroller(const ExecGraph& g, const std::vector<int>& stage, const Topology& t, int m, int stride)
      : g_(g), stage_(stage), t_(t), m_(m), stride_(stride), copies_(g.buffers().size(), std::vector<int>(m, -1)) {
    for (const auto& n : g.nodes()) {
      if (n.op != "OptimizerUpdate") continue;
      for (int b : n.reads) accumulators_.push_back(b);
    }
  }

  // The nodes of stage s's phase (backward or not) for micro-batch mb; returns what they write.
  std::vector<int> phase(int s, bool backward, int mb, const std::vector<int>& after) {
    std::vector<int> written;
    for (int i = 0; i < int(g_.nodes().size()); ++i) {
      const auto& n = g_.nodes()[i];
      if (stage_[i] != s || n.op == "OptimizerUpdate" || is_backward(i) != backward) continue;
      std::vector<int> reads = after;
      for (int b : n.reads) reads.push_back(read(b, mb, s));
      for (int b : n.writes) {
        if (is_accumulator(b) && mb > 0) reads.push_back(copy(b, mb - 1));  // gradients accumulate
      }
      std::vector<int> writes;
      for (int b : n.writes) writes.push_back(copy(b, mb));
      execution::NodeCost c = n.cost.share(1.0 / m_);
      c.device = s;
      a_.node(n.name + "#" + std::to_string(mb), n.op, c, reads, writes);
      written.insert(written.end(), writes.begin(), writes.end());
    }
    return written;
  }

  // Stage s's updates, once, on the gradients accumulated over every micro-batch.
  void updates(int s, const std::vector<int>& after) {
    for (int i = 0; i < int(g_.nodes().size()); ++i) {
      const auto& n = g_.nodes()[i];
      if (stage_[i] != s || n.op != "OptimizerUpdate") continue;
      std::vector<int> reads = after;
      for (int b : n.reads) reads.push_back(read(b, m_ - 1, s));
      std::vector<int> writes;
      for (int b : n.writes) writes.push_back(copy(b, 0));
      execution::NodeCost c = n.cost;
      c.device = s;
      a_.node(n.name, n.op, c, reads, writes, n.training);
    }
  }

  // A zero-time node on stage s that waits for `what`: the next phase reads its token.
  int barrier(int s, const std::string& name, const std::vector<int>& what) {
    const int token = a_.buffer(name, 0);
    a_.node(name, "StageBarrier", {0, 0, 1, execution::Unit::vector, s}, what, {token});
    return token;
  }

  void set_backward(std::vector<bool> backward) { backward_ = std::move(backward); }
  ExecGraph build() const { return a_.build(); }

 private:
  bool is_backward(int i) const { return backward_[i]; }
  bool is_accumulator(int b) const {
    return std::find(accumulators_.begin(), accumulators_.end(), b) != accumulators_.end();
  }

  // Buffer b of micro-batch mb: 1/m of its bytes, or all of them for a weight gradient.
  int copy(int b, int mb) {
    if (copies_[b][mb] < 0) {
      const auto& src = g_.buffers()[b];
      const std::int64_t bytes = is_accumulator(b) ? src.bytes : (src.bytes + m_ - 1) / m_;
      copies_[b][mb] = a_.buffer(src.name + "#" + std::to_string(mb), bytes, src.output);
    }
    return copies_[b][mb];
  }

  // Buffer b of micro-batch mb where stage s reads it: sent from its producer's stage.
  int read(int b, int mb, int s) {
    const int local = copy(b, mb);
    const int producer = g_.buffers()[b].producer;
    if (producer < 0 || stage_[producer] == s) return local;
    const auto key = std::make_tuple(b, mb, s);
    const auto it = sent_.find(key);
    if (it != sent_.end()) return it->second;
    const int from = stage_[producer];
    const std::int64_t bytes = g_.buffers()[b].bytes / (is_accumulator(b) ? 1 : m_);
    const double us =
        time_collective(t_, Collective::send_recv, Algorithm::ring, {from * stride_, s * stride_}, bytes).us;
    const std::string name = g_.buffers()[b].name + "#" + std::to_string(mb) + "@stage" + std::to_string(s);
    const int there = a_.buffer(name, bytes);
    a_.node("send:" + name, "Send", {us, 0, 1, execution::Unit::comm, from}, {local}, {there});
    return sent_[key] = there;
  }

  const ExecGraph& g_;
  const std::vector<int>& stage_;
  const Topology& t_;
  int m_, stride_;
  GraphAssembly a_;
  std::vector<std::vector<int>> copies_;
  std::vector<int> accumulators_;
  std::vector<bool> backward_;
  std::map<std::tuple<int, int, int>, int> sent_;
};

}  // namespace

double StagePlacement::imbalance() const {
  if (stage_us.empty()) return 1;
  const double mean = std::accumulate(stage_us.begin(), stage_us.end(), 0.0) / double(stage_us.size());
  return mean > 0 ? *std::max_element(stage_us.begin(), stage_us.end()) / mean : 1;
}

int forward_layers(const ExecGraph& g) {
  const std::vector<int> fwd = training_roles(g).forward;
  int layers = 0;
  for (int i = 0; i < int(fwd.size()); ++i) layers += fwd[i] == i ? 1 : 0;
  return layers;
}

StagePlacement place_stages(const ExecGraph& g, int stages) {
  const std::vector<int> fwd = training_roles(g).forward;
  std::vector<int> layers, position(g.nodes().size(), -1);
  for (int i = 0; i < int(g.nodes().size()); ++i) {
    if (fwd[i] == i) {  // a layer: a forward kernel (its collectives join it)
      position[i] = int(layers.size());
      layers.push_back(i);
    }
  }
  if (stages < 1 || stages > int(layers.size())) {
    throw_bad_input("pipeline: field 'stages' must be in 1.." + std::to_string(layers.size()) +
                    " (the step's forward layers), got " + std::to_string(stages));
  }
  std::vector<double> w(layers.size() + 1, 0);  // prefix sums of layer weights
  for (int i = 0; i < int(g.nodes().size()); ++i)
    w[std::max(0, position[std::max(0, fwd[i])]) + 1] += g.nodes()[i].cost.device_us();
  for (std::size_t j = 1; j < w.size(); ++j) w[j] += w[j - 1];
  const Cuts cuts = best_cuts(w, cut_bytes(g, layers, position), stages);
  StagePlacement p;
  p.crossing_bytes = cuts.crossing;
  std::vector<int> stage_of_layer(layers.size(), 0);
  for (int s = 0; s < stages; ++s) {
    for (std::size_t j = cuts.first[s]; j < layers.size(); ++j) stage_of_layer[j] = s;
  }
  p.stage_of_node.resize(g.nodes().size());
  p.stage_us.assign(stages, 0);
  for (int i = 0; i < int(g.nodes().size()); ++i) {
    p.stage_of_node[i] = fwd[i] < 0 ? 0 : stage_of_layer[position[fwd[i]]];
    p.stage_us[p.stage_of_node[i]] += g.nodes()[i].cost.device_us();
  }
  return p;
}

PipelineGraph with_pipeline(const ExecGraph& step, const Topology& topology, const PipelineOptions& o) {
  if (o.stride < 1 || o.stages * o.stride > topology.devices()) {
    throw_bad_input("pipeline: field 'stages' x stride must be at most the " + std::to_string(topology.devices()) +
                    " devices of topology '" + topology.name + "'");
  }
  if (o.micro_batches < 1) throw_bad_input("pipeline: field 'micro_batches' must be >= 1");
  PipelineGraph out;
  out.placement = place_stages(step, o.stages);
  const TrainingRoles roles = training_roles(step);
  std::vector<bool> backward(step.nodes().size());
  for (std::size_t i = 0; i < backward.size(); ++i) backward[i] = roles.role[i] != Role::forward;
  Unroller u(step, out.placement.stage_of_node, topology, o.micro_batches, o.stride);
  u.set_backward(backward);
  for (int s = 0; s < o.stages; ++s) {
    std::vector<int> after;
    for (const auto& [back, mb] : stage_order(o.order, s, o.stages, o.micro_batches)) {
      const std::vector<int> written = u.phase(s, back, mb, after);
      after = {u.barrier(s, "stage" + std::to_string(s) + (back ? ".B" : ".F") + std::to_string(mb), written)};
    }
    u.updates(s, after);
  }
  out.graph = u.build();
  return out;
}

PipelineStep pipeline_parallel(const ExecGraph& step, const execution::Device& device,
                               const execution::SchedulerOptions& scheduler, const Topology& topology,
                               const PipelineOptions& o) {
  PipelineGraph unrolled = with_pipeline(step, topology, o);
  PipelineStep out;
  out.placement = std::move(unrolled.placement);
  out.graph = std::move(unrolled.graph);
  out.timeline = execution::simulate(out.graph, device, scheduler);
  out.step_us = out.timeline.makespan_us;
  out.single_us = execution::simulate(step, device, scheduler).makespan_us;
  return out;
}

double PipelineStep::bubble() const {
  const double busy = std::accumulate(placement.stage_us.begin(), placement.stage_us.end(), 0.0);
  const double span = double(placement.stage_us.size()) * step_us;
  return span > 0 ? 1 - busy / span : 0;
}

Json PipelineStep::to_json() const {
  return {{"stages", placement.stage_us.size()},
          {"stage_us", placement.stage_us},
          {"imbalance", placement.imbalance()},
          {"crossing_bytes", placement.crossing_bytes},
          {"single_us", single_us},
          {"step_us", step_us},
          {"bubble", bubble()}};
}

std::string to_string(PipelineOrder o) { return o == PipelineOrder::gpipe ? "gpipe" : "1f1b"; }

PipelineOrder parse_pipeline_order(const std::string& s) {
  if (s == "gpipe") return PipelineOrder::gpipe;
  if (s == "1f1b") return PipelineOrder::one_f_one_b;
  throw_bad_input("field 'order' must be 'gpipe' or '1f1b'; got '" + s + "'");
}

}  // namespace atvoss::distributed
