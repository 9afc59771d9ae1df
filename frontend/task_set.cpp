#include "frontend/task_set.hpp"

namespace atvoss::frontend {

void TaskSet::add(const Workload& w, const std::string& name, int count) { add_step(w, name, count, false); }

void TaskSet::add_standalone(const Workload& w, const std::string& name, int count) { add_step(w, name, count, true); }

void TaskSet::add_step(const Workload& w, const std::string& name, int count, bool standalone) {
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].workload.key() == w.key()) {
      tasks_[i].weight += count;
      tasks_[i].layers.emplace_back(name, count);
      order_.push_back({i, name, count, standalone});
      return;
    }
  }
  order_.push_back({tasks_.size(), name, count, standalone});
  tasks_.push_back(TuneTask{w, count, name, {{name, count}}});
}

void TaskSet::add_fallback(FallbackNode node) { fallbacks_.push_back(std::move(node)); }

void TaskSet::add_folded(const std::string& name, const std::string& into) { folded_.emplace_back(name, into); }

Graph chain_graph(const TaskSet& tasks) {
  Graph g;
  g.add_tensor("input");
  std::string last = "input";
  for (const LayerStep& step : tasks.layer_order()) {
    const Workload& w = tasks.tasks()[step.task].workload;
    const std::string out = step.name + ":out";
    g.add_tensor(out, {}, w.out_elements() * dtype_bytes(w.dtype()), false, std::string(to_string(w.dtype())));
    GraphNode& node = g.node(g.add_node(step.name, w.op(), {step.standalone ? std::string("input") : last}, {out}));
    node.kernel = w;
    node.count = step.count;
    node.bytes = w.compulsory_bytes();
    if (!step.standalone) last = out;
    if (step.standalone) g.mark_output(out);
  }
  if (last != "input") g.mark_output(last);  // the model's output: read after it runs
  return g;
}

TaskSet tasks_from_graph(Graph g, std::string model, int batch) {
  TaskSet set(std::move(model), batch);
  for (const GraphNode& n : g.nodes()) {
    if (n.fused_into >= 0) {
      set.add_folded(n.name, g.nodes()[n.fused_into].name);
    } else if (n.kernel) {
      set.add(*n.kernel, n.name, n.count);
    } else if (n.view) {
      set.add_folded(n.name, "");
    } else {
      set.add_fallback({n.name, n.op, n.reason.empty() ? "no lowering for " + n.op : n.reason, n.bytes, n.count});
    }
  }
  set.set_graph(std::move(g));
  return set;
}

int TaskSet::total_occurrences() const {
  int n = 0;
  for (const auto& t : tasks_) n += t.weight;
  return n;
}

}  // namespace atvoss::frontend
