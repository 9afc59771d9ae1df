#include "frontend/fallback.hpp"

#include <algorithm>

#include "backend/backend.hpp"
#include "core/error.hpp"

namespace atvoss::frontend {

double fallback_us(const FallbackNode& node, const Target& target) {
  const double bandwidth = target.hbm_bytes_per_second();
  const double move_us = bandwidth > 0 ? node.bytes / bandwidth * 1e6 : 0;
  // A target that states no launch cost still pays something per kernel: 1 us, the order
  // of a kernel launch on any accelerator stack, so that the node never counts as free.
  const double launch_us = target.launch_us > 0 ? target.launch_us : 1.0;
  return std::max(1, node.count) * (move_us + launch_us);
}

double fallbacks_us(const TaskSet& tasks, const Target& target) {
  double total = 0;
  for (const auto& n : tasks.fallbacks()) total += fallback_us(n, target);
  return total;
}

namespace {

// Why w cannot run on target as a tuned task; empty when its default schedule exists.
// Any error of the lowering counts: a shape no template anticipated must not abort a model.
std::string unschedulable_reason(const Workload& w, const Target& target) {
  try {
    (void)backend::required_default(w, target);
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace

TaskSet without_unschedulable(const TaskSet& tasks, const Target& target) {
  std::vector<std::string> reasons;
  for (const auto& t : tasks.tasks()) reasons.push_back(unschedulable_reason(t.workload, target));
  if (std::all_of(reasons.begin(), reasons.end(), [](const auto& r) { return r.empty(); })) return tasks;
  TaskSet out(tasks.model(), tasks.batch());
  Graph graph = tasks.graph();
  for (const LayerStep& step : tasks.layer_order()) {
    const Workload& w = tasks.tasks()[step.task].workload;
    if (!reasons[step.task].empty()) {
      const std::string why = "no valid schedule on " + target.name + " (" + reasons[step.task] + ")";
      out.add_fallback({step.name, w.op(), why, w.compulsory_bytes(), step.count});
      if (const int i = graph.node_index(step.name); i >= 0) {  // the node is now not tuned
        graph.node(i).kernel.reset();
        graph.node(i).reason = why;
      }
    } else if (step.standalone) {
      out.add_standalone(w, step.name, step.count);
    } else {
      out.add(w, step.name, step.count);
    }
  }
  for (const auto& n : tasks.fallbacks()) out.add_fallback(n);
  for (const auto& [name, into] : tasks.folded()) out.add_folded(name, into);
  out.set_graph(std::move(graph));
  return out;
}

Json fallbacks_json(const TaskSet& tasks, const Target& target) {
  Json list = Json::array();
  for (const auto& n : tasks.fallbacks()) {
    list.push_back({{"name", n.name},
                    {"op", n.op},
                    {"reason", n.reason},
                    {"count", n.count},
                    {"bytes", n.bytes},
                    {"time_us", fallback_us(n, target)}});
  }
  return list;
}

}  // namespace atvoss::frontend
