#include "distributed/data_parallel.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "core/error.hpp"
#include "distributed/graph_assembly.hpp"

namespace atvoss::distributed {
namespace {

using execution::ExecGraph;

// Each device's gradients in buckets of its own, in production order.
std::vector<GradientBucket> bucket(const ExecGraph& g, const std::vector<int>& grads, std::int64_t cap) {
  std::vector<GradientBucket> out;
  std::map<int, int> open;  // device -> its bucket being filled
  for (int b : grads) {
    const int device = g.nodes()[g.buffers()[b].producer].cost.device;
    auto it = open.find(device);
    if (it == open.end() || out[it->second].bytes >= cap) {
      out.emplace_back();
      it = open.insert_or_assign(device, int(out.size()) - 1).first;
    }
    out[it->second].buffers.push_back(b);
    out[it->second].bytes += g.buffers()[b].bytes;
  }
  return out;
}

int device_of(const ExecGraph& g, const GradientBucket& b) {
  return g.nodes()[g.buffers()[b.buffers.front()].producer].cost.device;
}

// The step with one AllReduce node per bucket and a barrier where the backward pass ends.
// Updates wait for the barrier and their bucket's AllReduce (PyTorch DDP: the optimizer steps
// once backward() returns, which waits for every bucket); without overlap, every AllReduce
// waits for the barrier too. Each extra node is added right after the last node it waits
// for, so the assembled order keeps it there (graph_assembly.hpp).
// instant: every AllReduce takes no time (the step on one device).
ExecGraph with_allreduces(const ExecGraph& g, const std::vector<GradientBucket>& buckets, bool overlap,
                          bool instant = false) {
  GraphAssembly a;
  for (const auto& b : g.buffers()) a.buffer(b.name, b.bytes, b.output);
  const int k_count = int(buckets.size());
  std::vector<int> token, last(k_count, -1), grads;
  for (int k = 0; k < k_count; ++k) token.push_back(a.buffer("allreduce:bucket" + std::to_string(k), 0));
  const int done = a.buffer("backward:done", 0);
  std::map<int, std::vector<int>> waits;  // update -> the tokens it waits for
  for (int k = 0; k < k_count; ++k) {
    for (int b : buckets[k].buffers) {
      last[k] = std::max(last[k], g.buffers()[b].producer);
      grads.push_back(b);
      for (int c : g.buffers()[b].consumers) {
        if (g.nodes()[c].op == "OptimizerUpdate") waits[c] = {token[k], done};
      }
    }
  }
  const int last_grad = *std::max_element(last.begin(), last.end());
  auto allreduce = [&](int k) {
    std::vector<int> reads = buckets[k].buffers;
    if (!overlap) reads.push_back(done);
    a.node("allreduce:bucket" + std::to_string(k), "AllReduce",
           {instant ? 0.0 : buckets[k].allreduce.us, 0, 1, execution::Unit::comm, device_of(g, buckets[k])}, reads,
           {token[k]});
  };
  for (int i = 0; i < int(g.nodes().size()); ++i) {
    const execution::ExecNode& n = g.nodes()[i];
    std::vector<int> reads = n.reads;
    if (const auto w = waits.find(i); w != waits.end()) reads.insert(reads.end(), w->second.begin(), w->second.end());
    a.node(n.name, n.op, n.cost, reads, n.writes, n.training);
    if (i == last_grad) a.node("backward:done", "Barrier", {0, 0, 1, execution::Unit::vector}, grads, {done});
    for (int k = 0; k < k_count; ++k) {
      if (overlap ? last[k] == i : i == last_grad) allreduce(k);
    }
  }
  return a.build();
}

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
      for (int b : n.reads) {  // not the zero-byte tokens a plan's barriers add
        if (g.buffers()[b].producer >= 0 && g.buffers()[b].bytes > 0) found.emplace_back(g.buffers()[b].producer, b);
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

DataParallelGraph with_data_parallel(const ExecGraph& step, const Topology& topology,
                                     const DataParallelOptions& options) {
  check_options(topology, options);
  const std::vector<int> grads = gradient_buffers(step);
  if (grads.empty()) throw_bad_input("data parallel: the graph has no gradient (is it a training step?)");
  DataParallelGraph out;
  out.buckets = bucket(step, grads, options.bucket_bytes);
  for (auto& b : out.buckets) {
    std::vector<int> group;
    for (int r = 0; r < options.devices; ++r) {
      group.push_back(device_of(step, b) * options.device_stride + r * options.group_stride);
    }
    b.allreduce = options.algorithm
                      ? time_collective(topology, Collective::all_reduce, *options.algorithm, group, b.bytes)
                      : best_collective(topology, Collective::all_reduce, group, b.bytes);
  }
  out.graph = with_allreduces(step, out.buckets, options.overlap);
  return out;
}

DataParallelStep data_parallel(const ExecGraph& step, const execution::Device& device,
                               const execution::SchedulerOptions& scheduler, const Topology& topology,
                               const DataParallelOptions& options) {
  DataParallelGraph built = with_data_parallel(step, topology, options);
  DataParallelStep out;
  out.graph = std::move(built.graph);
  out.buckets = std::move(built.buckets);
  for (const auto& b : out.buckets) out.comm_us += b.allreduce.us;
  out.timeline = execution::simulate(out.graph, device, scheduler);
  out.step_us = out.timeline.makespan_us;
  // One device: the same step, its AllReduces instant (a group of one moves nothing).
  out.single_us =
      execution::simulate(with_allreduces(step, out.buckets, options.overlap, true), device, scheduler).makespan_us;
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
  return {{"single_us", single_us},     {"step_us", step_us},
          {"comm_us", comm_us},         {"exposed_comm_us", exposed_comm_us()},
          {"efficiency", efficiency()}, {"buckets", buckets_json}};
}

}  // namespace atvoss::distributed
