#include "execution/recompute.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace atvoss::execution {
namespace {

// When buffer b is last needed (its last consumer's end; an output: the run's end).
double end_of(const ExecGraph& g, const Timeline& t, int b) {
  const ExecBuffer& buf = g.buffers()[b];
  double end = buf.producer >= 0 ? t.runs[buf.producer].end_us : 0;
  for (int c : buf.consumers) end = std::max(end, t.runs[c].end_us);
  return buf.output ? std::max(end, t.makespan_us) : end;
}

// When b is first needed after cut_us (infinity: never), or -1 if it is in use at cut_us.
double first_use_after(const ExecGraph& g, const Timeline& t, int b, double cut_us) {
  double first_later = std::numeric_limits<double>::infinity();
  for (int c : g.buffers()[b].consumers) {
    const NodeRun& r = t.runs[c];
    if (r.start_us <= cut_us && r.end_us > cut_us) return -1;
    if (r.start_us > cut_us) first_later = std::min(first_later, r.start_us);
  }
  return first_later;
}

// The nodes that make b again by `when` from tensors that are live then anyway: b's producer
// and, going back, the producer of every input that is dead by then (a segment between kept
// tensors, as in Chen et al.), in graph order; empty if that takes more than max_nodes nodes
// or needs a graph input that is dead by then (nothing can make it again).
std::vector<int> chain_for(const ExecGraph& g, const Timeline& t, int b, double when, int max_nodes) {
  std::vector<int> chain = {g.buffers()[b].producer};
  for (std::size_t k = 0; k < chain.size(); ++k) {
    for (int in : g.nodes()[chain[k]].reads) {
      if (end_of(g, t, in) >= when) continue;  // kept until then anyway
      const int p = g.buffers()[in].producer;
      if (p < 0) return {};
      if (std::find(chain.begin(), chain.end(), p) != chain.end()) continue;
      if (int(chain.size()) == max_nodes) return {};
      chain.push_back(p);
    }
  }
  std::sort(chain.begin(), chain.end());
  return chain;
}

// The chain that recomputes b for its consumers after cut_us, if dropping b over cut_us helps
// and extends nothing: b is live across cut_us and not used there, and a consumer comes after
// it; empty otherwise.
std::vector<int> droppable(const ExecGraph& g, const Timeline& t, int b, double cut_us, int max_chain) {
  const ExecBuffer& buf = g.buffers()[b];
  if (buf.producer < 0 || buf.output || buf.bytes <= 0) return {};
  if (t.runs[buf.producer].end_us > cut_us) return {};
  const double first_later = first_use_after(g, t, b, cut_us);
  if (first_later < 0 || first_later == std::numeric_limits<double>::infinity()) return {};
  return chain_for(g, t, b, first_later, max_chain);
}

double time_of(const ExecGraph& g, const std::vector<int>& chain) {
  double us = 0;
  for (int n : chain) us += g.nodes()[n].cost.time_us;
  return us;
}

// The node whose end starts the recompute: among the nodes before the later consumers in graph
// order, the last to end after the cut and by the first of them to start, so the copy is
// made just in time, as a runtime does when its backward pass reaches the segment (without
// it, a core that is free early would recompute at once and keep the copy live across the
// very instant the drop was for). -1: none, the consumer's inputs decide.
int trigger_of(const Timeline& t, const std::vector<int>& later, double cut_us) {
  double first_start = std::numeric_limits<double>::infinity();
  for (int c : later) first_start = std::min(first_start, t.runs[c].start_us);
  int trigger = -1;
  for (int j = 0; j < later.front(); ++j) {
    const double end = t.runs[j].end_us;
    if (end > cut_us && end <= first_start && (trigger < 0 || end > t.runs[trigger].end_us)) trigger = j;
  }
  return trigger;
}

// Adds the chain's nodes again, reading each other's copies; the ones that start it also
// read the consumer's other inputs and the trigger's token, so they wait for them (the
// gradient, in a backward pass).
void add_recompute_nodes(const ExecGraph& g, const std::vector<int>& chain, const std::map<int, int>& copy_of,
                         const ExecNode& consumer, int b, int token, ExecGraph& out) {
  const auto mapped = [&](int buf) {
    const auto it = copy_of.find(buf);
    return it == copy_of.end() ? buf : it->second;
  };
  for (int c : chain) {
    const ExecNode& n = g.nodes()[c];
    std::vector<int> reads, writes;
    bool starts = true;
    for (int r : n.reads) {
      reads.push_back(mapped(r));
      if (copy_of.count(r)) starts = false;
    }
    for (int w : n.writes) writes.push_back(mapped(w));
    if (starts) {
      for (int r : consumer.reads) {
        if (r != b && std::find(reads.begin(), reads.end(), r) == reads.end()) reads.push_back(r);
      }
      if (token >= 0) reads.push_back(token);
    }
    out.add_node(n.name + " (recompute)", n.op, n.cost, reads, writes);
  }
}

}  // namespace

ExecGraph with_recompute(const ExecGraph& g, const Timeline& t, int b, double cut_us, const std::vector<int>& chain) {
  std::vector<int> later;  // b's consumers after the cut, in graph order
  for (int c : g.buffers()[b].consumers) {
    if (t.runs[c].start_us > cut_us) later.push_back(c);
  }
  std::sort(later.begin(), later.end());
  const int trigger = trigger_of(t, later, cut_us);
  ExecGraph out;
  for (const ExecBuffer& buf : g.buffers()) out.add_buffer(buf.name, buf.bytes, buf.output);
  std::map<int, int> copy_of;  // a buffer the chain writes -> its recomputed copy
  for (int c : chain) {
    for (int w : g.nodes()[c].writes) {
      copy_of[w] = out.add_buffer(g.buffers()[w].name + " (recomputed)", g.buffers()[w].bytes);
    }
  }
  const int token = trigger < 0 ? -1 : out.add_buffer(g.buffers()[b].name + " (recompute now)", 0);
  for (int i = 0; i < int(g.nodes().size()); ++i) {
    const ExecNode& n = g.nodes()[i];
    if (i == later.front()) add_recompute_nodes(g, chain, copy_of, n, b, token, out);
    std::vector<int> reads = n.reads, writes = n.writes;
    if (std::binary_search(later.begin(), later.end(), i)) std::replace(reads.begin(), reads.end(), b, copy_of.at(b));
    if (i == trigger) writes.push_back(token);
    out.add_node(n.name, n.op, n.cost, reads, writes, n.training);
  }
  return out;
}

RecomputeResult recompute_to_fit(const ExecGraph& g, const Device& device, const SchedulerOptions& options,
                                 std::int64_t budget_bytes, const RecomputeOptions& limits) {
  RecomputeResult r{g, simulate(g, device, options), {}, {}, 0, false};
  r.plan = plan_memory(r.graph, r.timeline);
  const double base_us = r.timeline.makespan_us;
  std::vector<std::string> tried;  // dropped once without lowering the peak: not again
  while (r.plan.peak_bytes > budget_bytes && int(r.tensors.size()) < limits.max_tensors) {
    const double cut = live_peak(r.plan.allocations).at_us;
    int best = -1;
    std::vector<int> best_chain;
    double best_score = 0;
    for (int b = 0; b < int(r.graph.buffers().size()); ++b) {
      const ExecBuffer& buf = r.graph.buffers()[b];
      if (std::find(tried.begin(), tried.end(), buf.name) != tried.end()) continue;
      std::vector<int> chain = droppable(r.graph, r.timeline, b, cut, limits.max_chain);
      if (chain.empty()) continue;
      const double score = double(buf.bytes) / std::max(1e-3, time_of(r.graph, chain));
      if (score > best_score) {
        best_score = score;
        best = b;
        best_chain = std::move(chain);
      }
    }
    if (best < 0) break;
    const std::string name = r.graph.buffers()[best].name;
    ExecGraph graph = with_recompute(r.graph, r.timeline, best, cut, best_chain);
    Timeline timeline = simulate(graph, device, options);
    MemoryPlan plan = plan_memory(graph, timeline);
    tried.push_back(name);
    if (plan.peak_bytes >= r.plan.peak_bytes) continue;  // moved the peak, did not lower it
    r.tensors.push_back(name);
    r.recomputed_nodes += int(best_chain.size());
    r.graph = std::move(graph);
    r.timeline = std::move(timeline);
    r.plan = std::move(plan);
  }
  r.extra_us = r.timeline.makespan_us - base_us;
  r.fits = r.plan.peak_bytes <= budget_bytes;
  return r;
}

}  // namespace atvoss::execution
