#include "plan/layout_choice.hpp"

#include <memory>
#include <sstream>

#include "backend/sweep.hpp"

namespace atvoss::plan {
namespace {

// A producer -> consumer pair of conv-family layers: the consumer's input crosses it.
struct Edge {
  std::size_t from_step = 0, to_step = 0;
};

std::vector<Edge> chain_edges(const frontend::TaskSet& model, const std::vector<bool>& has_layout) {
  std::vector<Edge> edges;
  std::optional<std::size_t> last;
  const auto& order = model.layer_order();
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i].standalone || !has_layout[order[i].task]) continue;
    if (last) edges.push_back({*last, i});
    last = i;
  }
  return edges;
}

double edge_us(const frontend::TaskSet& model, const Edge& e, Layout from, Layout to, const TransposeCost& cost) {
  if (from == to) return 0;
  const Workload& consumer = model.tasks()[model.layer_order()[e.to_step].task].workload;
  return cost(*lowering::layout_change(consumer, from, to));
}

// Tasks with the knob and at least one layout to choose from.
std::vector<bool> layout_tasks(const frontend::TaskSet& model, const std::vector<std::map<Layout, double>>& times) {
  std::vector<bool> v;
  for (std::size_t i = 0; i < model.tasks().size(); ++i) {
    v.push_back(lowering::has_layout_knob(model.tasks()[i].workload) && i < times.size() && !times[i].empty());
  }
  return v;
}

}  // namespace

TransposeCost swept_transpose_cost(const Target& target) {
  auto memo = std::make_shared<std::map<std::string, double>>();
  return [target, memo](const Workload& w) {
    const auto it = memo->find(w.key());
    if (it != memo->end()) return it->second;
    std::ostringstream csv;  // the sweep's table is not kept
    backend::SweepOptions o;
    o.measure.noise = 0;
    const double us = backend::sweep(w, target, o, csv).best_us;
    memo->emplace(w.key(), us);
    return us;
  };
}

std::vector<LayoutChange> layout_changes(const frontend::TaskSet& model,
                                         const std::vector<std::optional<Layout>>& layouts, const TransposeCost& cost) {
  std::vector<bool> has_layout;
  for (const auto& l : layouts) has_layout.push_back(l.has_value());
  std::vector<LayoutChange> out;
  const auto& order = model.layer_order();
  for (const Edge& e : chain_edges(model, has_layout)) {
    const Layout from = *layouts[order[e.from_step].task], to = *layouts[order[e.to_step].task];
    if (from == to) continue;
    const Workload& consumer = model.tasks()[order[e.to_step].task].workload;
    LayoutChange c{
        order[e.from_step].name, order[e.to_step].name, from, to, *lowering::layout_change(consumer, from, to), 0};
    c.time_us = cost(c.transpose);
    out.push_back(std::move(c));
  }
  return out;
}

double total_us(const std::vector<LayoutChange>& changes) {
  double us = 0;
  for (const auto& c : changes) us += c.time_us;
  return us;
}

LayoutChoice choose_layouts(const frontend::TaskSet& model, const std::vector<std::map<Layout, double>>& times,
                            const TransposeCost& cost) {
  const std::vector<bool> has_layout = layout_tasks(model, times);
  const auto& order = model.layer_order();
  const std::vector<Edge> edges = chain_edges(model, has_layout);
  LayoutChoice choice;
  choice.layouts.resize(model.tasks().size());
  for (std::size_t i = 0; i < times.size(); ++i) {
    if (!has_layout[i]) continue;
    auto best = times[i].begin();
    for (auto it = times[i].begin(); it != times[i].end(); ++it) {
      if (it->second < best->second) best = it;
    }
    choice.layouts[i] = best->first;
  }
  // The model's total as it depends on task i in layout l, the others fixed.
  auto local_us = [&](std::size_t i, Layout l) {
    double us = model.tasks()[i].weight * times[i].at(l);
    for (const Edge& e : edges) {
      const std::size_t a = order[e.from_step].task, b = order[e.to_step].task;
      if (a != i && b != i) continue;
      const Layout la = a == i ? l : *choice.layouts[a], lb = b == i ? l : *choice.layouts[b];
      us += edge_us(model, e, la, lb, cost);
    }
    return us;
  };
  // Each move strictly lowers the total, so this ends; the bound only guards the loop.
  for (int pass = 0; pass < 100; ++pass) {
    bool moved = false;
    for (std::size_t i = 0; i < times.size(); ++i) {
      if (!choice.layouts[i]) continue;
      Layout best = *choice.layouts[i];
      double best_us = local_us(i, best);
      for (const auto& [l, t] : times[i]) {
        const double us = local_us(i, l);
        if (us < best_us - 1e-9) {
          best = l;
          best_us = us;
        }
      }
      moved = moved || best != *choice.layouts[i];
      choice.layouts[i] = best;
    }
    if (!moved) break;
  }
  choice.changes = layout_changes(model, choice.layouts, cost);
  return choice;
}

}  // namespace atvoss::plan
