// Layout choice: which layout each conv task of a model runs in, and where the model
// pays a transpose between two layers whose layouts differ. Each conv task is tuned
// with the layout knob free (lowering/layout.hpp); this pass then walks the model's
// layer chain (frontend::TaskSet::layer_order: each layer reads the output of the last conv-family
// layer before it; the ops in between work in whatever layout they are given, and the
// model's input arrives in the first conv's layout) and decides, task by task, whether
// to keep its fastest layout and pay the transposes at its edges or fall back to the
// layout its neighbours use. The choice starts from each task's fastest layout and
// moves one task at a time to the layout that lowers the model's total (its ops plus
// its transposes) until no move helps: a local search, exact on a chain whose tasks
// each occur once. docs/job-spec.md describes it. Pure functions: thread-safe if the
// cost function is.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/target.hpp"
#include "frontend/task_set.hpp"
#include "lowering/layout.hpp"

namespace atvoss::plan {

using lowering::Layout;

// Microseconds one transpose workload takes.
using TransposeCost = std::function<double(const Workload& transpose)>;

// The best of the transpose's valid schedules on target, simulated without noise
// (memoised per workload; not thread-safe).
TransposeCost swept_transpose_cost(const Target& target);

struct LayoutChange {
  std::string from_layer, to_layer;  // producer and consumer layer names
  Layout from = Layout::fractal, to = Layout::fractal;
  Workload transpose;  // the tensor converted (lowering::layout_change)
  double time_us = 0;
};

// The transposes a model pays when task i runs in layouts[i] (nullopt: no layout knob).
// REQUIRES: layouts.size() == model.tasks().size().
std::vector<LayoutChange> layout_changes(const frontend::TaskSet& model,
                                         const std::vector<std::optional<Layout>>& layouts, const TransposeCost& cost);

double total_us(const std::vector<LayoutChange>& changes);

struct LayoutChoice {
  std::vector<std::optional<Layout>> layouts;  // per task; nullopt: no layout knob
  std::vector<LayoutChange> changes;
};

// times[i]: task i's time (microseconds, one occurrence) in each layout it can run
// in; empty for a task without the knob. A task whose only entry is one layout is held
// there (e.g. an untuned task at its default).
LayoutChoice choose_layouts(const frontend::TaskSet& model, const std::vector<std::map<Layout, double>>& times,
                            const TransposeCost& cost);

}  // namespace atvoss::plan
