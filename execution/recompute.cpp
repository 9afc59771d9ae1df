#include "execution/recompute.hpp"

#include <algorithm>
#include <limits>

namespace atvoss::execution {
namespace {

// When buffer b is last needed (its last consumer's end; an output: the run's end).
double end_of(const ExecGraph& g, const Timeline& t, int b) {
  const ExecBuffer& buf = g.buffers()[b];
  double end = buf.producer >= 0 ? t.runs[buf.producer].end_us : 0;
  for (int c : buf.consumers) end = std::max(end, t.runs[c].end_us);
  return buf.output ? std::max(end, t.makespan_us) : end;
}

// Whether dropping b over cut_us helps and extends nothing: b is live across cut_us and not
// used there, a consumer comes after it, and every input of b's producer is needed until
// that consumer anyway.
bool droppable(const ExecGraph& g, const Timeline& t, int b, double cut_us) {
  const ExecBuffer& buf = g.buffers()[b];
  if (buf.producer < 0 || buf.output || buf.bytes <= 0) return false;
  if (t.runs[buf.producer].end_us > cut_us) return false;
  double first_later = std::numeric_limits<double>::infinity();
  for (int c : buf.consumers) {
    const NodeRun& r = t.runs[c];
    if (r.start_us <= cut_us && r.end_us > cut_us) return false;  // in use at the cut
    if (r.start_us > cut_us) first_later = std::min(first_later, r.start_us);
  }
  if (first_later == std::numeric_limits<double>::infinity()) return false;
  for (int in : g.nodes()[buf.producer].reads) {
    if (g.buffers()[in].producer >= 0 && end_of(g, t, in) < first_later) return false;
  }
  return true;
}

}  // namespace

ExecGraph with_recompute(const ExecGraph& g, const Timeline& t, int b, double cut_us) {
  const ExecBuffer& dropped = g.buffers()[b];
  const ExecNode& producer = g.nodes()[dropped.producer];
  std::vector<int> later;  // consumers after the cut, in graph order
  for (int c : dropped.consumers) {
    if (t.runs[c].start_us > cut_us) later.push_back(c);
  }
  std::sort(later.begin(), later.end());
  ExecGraph out;
  for (const ExecBuffer& buf : g.buffers()) out.add_buffer(buf.name, buf.bytes, buf.output);
  const int copy = out.add_buffer(dropped.name + " (recomputed)", dropped.bytes);
  for (int i = 0; i < int(g.nodes().size()); ++i) {
    const ExecNode& n = g.nodes()[i];
    const bool reads_copy = std::binary_search(later.begin(), later.end(), i);
    if (i == later.front()) {
      std::vector<int> reads = producer.reads;
      for (int r : n.reads) {
        if (r != b && std::find(reads.begin(), reads.end(), r) == reads.end()) reads.push_back(r);
      }
      out.add_node(producer.name + " (recompute)", producer.op, producer.cost, reads, {copy});
    }
    std::vector<int> reads = n.reads;
    if (reads_copy) std::replace(reads.begin(), reads.end(), b, copy);
    out.add_node(n.name, n.op, n.cost, reads, n.writes);
  }
  return out;
}

RecomputeResult recompute_to_fit(const ExecGraph& g, const Device& device, const SchedulerOptions& options,
                                 std::int64_t budget_bytes, int max_tensors) {
  RecomputeResult r{g, simulate(g, device, options), {}, {}, 0, false};
  r.plan = plan_memory(r.graph, r.timeline);
  const double base_us = r.timeline.makespan_us;
  std::vector<std::string> tried;  // dropped once without lowering the peak: not again
  while (r.plan.peak_bytes > budget_bytes && int(r.tensors.size()) < max_tensors) {
    const double cut = live_peak(r.plan.allocations).at_us;
    int best = -1;
    double best_score = 0;
    for (int b = 0; b < int(r.graph.buffers().size()); ++b) {
      const ExecBuffer& buf = r.graph.buffers()[b];
      if (std::find(tried.begin(), tried.end(), buf.name) != tried.end() || !droppable(r.graph, r.timeline, b, cut)) {
        continue;
      }
      const double score = double(buf.bytes) / std::max(1e-3, r.graph.nodes()[buf.producer].cost.time_us);
      if (score > best_score) {
        best_score = score;
        best = b;
      }
    }
    if (best < 0) break;
    const std::string name = r.graph.buffers()[best].name;
    ExecGraph graph = with_recompute(r.graph, r.timeline, best, cut);
    Timeline timeline = simulate(graph, device, options);
    MemoryPlan plan = plan_memory(graph, timeline);
    tried.push_back(name);
    if (plan.peak_bytes >= r.plan.peak_bytes) continue;  // moved the peak, did not lower it
    r.tensors.push_back(name);
    r.graph = std::move(graph);
    r.timeline = std::move(timeline);
    r.plan = std::move(plan);
  }
  r.extra_us = r.timeline.makespan_us - base_us;
  r.fits = r.plan.peak_bytes <= budget_bytes;
  return r;
}

}  // namespace atvoss::execution
