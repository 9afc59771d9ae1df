#include "distributed/data_parallel.hpp"

#include <algorithm>
#include <map>
#include <queue>
#include <string>

#include "core/error.hpp"

namespace atvoss::distributed {
namespace {

using execution::ExecGraph;

std::vector<GradientBucket> bucket(const ExecGraph& g, const std::vector<int>& grads, std::int64_t cap) {
  std::vector<GradientBucket> out;
  for (int b : grads) {
    if (out.empty() || out.back().bytes >= cap) out.emplace_back();
    out.back().buffers.push_back(b);
    out.back().bytes += g.buffers()[b].bytes;
  }
  return out;
}

// The step with one AllReduce node per bucket and a barrier where the backward pass ends,
// in an order that keeps it topological. Extra nodes: AllReduce k is node n + k, the barrier
// n + buckets. Updates wait for the barrier and their bucket's AllReduce (PyTorch DDP: the
// optimizer steps once backward() returns, which waits for every bucket); without overlap,
// every AllReduce waits for the barrier too.
class Builder {
 public:
  Builder(const ExecGraph& g, const std::vector<GradientBucket>& buckets, bool overlap)
      : g_(g), buckets_(buckets), n_(int(g.nodes().size())), k_(int(buckets.size())), barrier_(n_ + k_) {
    preds_.resize(n_ + k_ + 1);
    key_.resize(n_ + k_ + 1);
    reads_.resize(k_ + 1);
    for (int i = 0; i < n_; ++i) {
      preds_[i] = g.nodes()[i].preds;
      key_[i] = i;
    }
    for (int k = 0; k < k_; ++k) wire_bucket(k);
    // Keys place each extra node right after the last node it waits for; ties keep bucket order.
    key_[barrier_] = *std::max_element(key_.begin() + n_, key_.begin() + barrier_) - 0.25;
    for (int k = 0; k < k_; ++k) {
      if (!overlap) {
        preds_[n_ + k].push_back(barrier_);
        key_[n_ + k] = key_[barrier_];
      }
      key_[n_ + k] += 1e-6 * k;
    }
  }

  ExecGraph build(const std::vector<CollectiveTime>& times) const {
    ExecGraph out;
    for (const auto& b : g_.buffers()) out.add_buffer(b.name, b.bytes, b.output);
    std::vector<int> token(k_ + 1);
    for (int k = 0; k <= k_; ++k) token[k] = out.add_buffer(extra_name(k), 0);
    for (int i : order()) {
      if (i >= n_) {
        const int k = i - n_;
        std::vector<int> reads = reads_[k];
        if (k < k_ && std::count(preds_[i].begin(), preds_[i].end(), barrier_)) reads.push_back(token[k_]);
        const execution::NodeCost cost = k < k_ ? execution::NodeCost{times[k].us, 0, 1, execution::Unit::comm}
                                                : execution::NodeCost{0, 0, 1, execution::Unit::vector};
        out.add_node(extra_name(k), k < k_ ? "AllReduce" : "Barrier", cost, reads, {token[k]});
        continue;
      }
      const execution::ExecNode& n = g_.nodes()[i];
      std::vector<int> reads = n.reads;
      const auto waits = waits_on_.find(i);
      if (waits != waits_on_.end()) {
        for (int k : waits->second) reads.push_back(token[k]);
        reads.push_back(token[k_]);
      }
      out.add_node(n.name, n.op, n.cost, reads, n.writes);
    }
    return out;
  }

 private:
  std::string extra_name(int k) const {
    return k < k_ ? "allreduce:bucket" + std::to_string(k) : std::string("backward:done");
  }

  // AllReduce k and the barrier read the bucket's gradients and come after their producers;
  // the updates that read them wait for both.
  void wire_bucket(int k) {
    const int node = n_ + k;
    key_[node] = -1;
    for (int b : buckets_[k].buffers) {
      const int producer = g_.buffers()[b].producer;
      for (int extra : {node, barrier_}) preds_[extra].push_back(producer);
      key_[node] = std::max(key_[node], producer + 0.5);
      reads_[k].push_back(b);
      reads_[k_].push_back(b);
      for (int c : g_.buffers()[b].consumers) {
        if (g_.nodes()[c].op != "OptimizerUpdate") continue;
        preds_[c].push_back(node);
        preds_[c].push_back(barrier_);
        waits_on_[c].push_back(k);
      }
    }
  }

  // Kahn's algorithm, the lowest key first.
  std::vector<int> order() const {
    const int total = int(preds_.size());
    std::vector<int> waiting(total, 0);
    std::vector<std::vector<int>> succs(total);
    for (int i = 0; i < total; ++i) {
      for (int p : preds_[i]) {
        ++waiting[i];
        succs[p].push_back(i);
      }
    }
    auto later = [&](int a, int b) { return key_[a] > key_[b]; };
    std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
    for (int i = 0; i < total; ++i) {
      if (waiting[i] == 0) ready.push(i);
    }
    std::vector<int> out;
    while (!ready.empty()) {
      const int i = ready.top();
      ready.pop();
      out.push_back(i);
      for (int s : succs[i]) {
        if (--waiting[s] == 0) ready.push(s);
      }
    }
    return out;
  }

  const ExecGraph& g_;
  const std::vector<GradientBucket>& buckets_;
  int n_, k_, barrier_;
  std::vector<std::vector<int>> preds_, reads_;  // reads_: of each AllReduce, then the barrier
  std::vector<double> key_;
  std::map<int, std::vector<int>> waits_on_;  // update -> its buckets
};

void check_options(const Topology& t, const DataParallelOptions& o) {
  if (o.devices < 1 || o.devices > t.devices()) {
    throw_bad_input("data parallel: field 'devices' must be in 1.." + std::to_string(t.devices()) +
                    " (the devices of topology '" + t.name + "'), got " + std::to_string(o.devices));
  }
  if (o.bucket_bytes < 1) throw_bad_input("data parallel: field 'bucket_bytes' must be >= 1");
}

}  // namespace

std::vector<int> gradient_buffers(const ExecGraph& g) {
  std::vector<std::pair<int, int>> found;  // (producer, buffer)
  for (int i = 0; i < int(g.nodes().size()); ++i) {
    const execution::ExecNode& n = g.nodes()[i];
    if (n.op == "OptimizerUpdate") {
      for (int b : n.reads) {
        if (g.buffers()[b].producer >= 0) found.emplace_back(g.buffers()[b].producer, b);
      }
    }
    if (n.op == "BiasGrad") {
      for (int b : n.writes) found.emplace_back(i, b);
    }
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  std::vector<int> out;
  for (const auto& [producer, b] : found) out.push_back(b);
  return out;
}

DataParallelStep data_parallel(const ExecGraph& step, const execution::Device& device,
                               const execution::SchedulerOptions& scheduler, const Topology& topology,
                               const DataParallelOptions& options) {
  check_options(topology, options);
  const std::vector<int> grads = gradient_buffers(step);
  if (grads.empty()) throw_bad_input("data parallel: the graph has no gradient (is it a training step?)");
  DataParallelStep out;
  out.buckets = bucket(step, grads, options.bucket_bytes);
  const std::vector<int> group = first_devices(options.devices);
  std::vector<CollectiveTime> times;
  for (auto& b : out.buckets) {
    b.allreduce = options.algorithm
                      ? time_collective(topology, Collective::all_reduce, *options.algorithm, group, b.bytes)
                      : best_collective(topology, Collective::all_reduce, group, b.bytes);
    times.push_back(b.allreduce);
    out.comm_us += b.allreduce.us;
  }
  const Builder builder(step, out.buckets, options.overlap);
  out.graph = builder.build(times);
  out.timeline = execution::simulate(out.graph, device, scheduler);
  out.step_us = out.timeline.makespan_us;
  // One device: the same step, its AllReduces instant (a group of one moves nothing).
  const std::vector<CollectiveTime> none(times.size());
  out.single_us = execution::simulate(builder.build(none), device, scheduler).makespan_us;
  return out;
}

Json DataParallelStep::to_json() const {
  Json buckets_json = Json::array();
  for (const auto& b : buckets) {
    buckets_json.push_back({{"gradients", b.buffers.size()},
                            {"bytes", b.bytes},
                            {"algorithm", to_string(b.allreduce.algorithm)},
                            {"us", b.allreduce.us},
                            {"lower_bound_us", b.allreduce.lower_bound_us}});
  }
  return {{"single_us", single_us},           {"step_us", step_us},         {"comm_us", comm_us},
          {"exposed_comm_us", exposed_comm_us()}, {"efficiency", efficiency()}, {"buckets", buckets_json}};
}

}  // namespace atvoss::distributed
