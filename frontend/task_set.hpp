// TaskSet: the distinct workloads ("tasks") of a model, each with its weight —
// the number of times the model runs it — plus the nodes that no task stands for
// (FallbackNode: kept by name, never dropped). Weighted end-to-end time is
// sum(weight * time) plus the fallback nodes' times (frontend/fallback.hpp); the task
// scheduler minimises the first part. Both the model zoo and the ONNX importer build a graph
// (graph.hpp) and derive their TaskSet from it (tasks_from_graph), so deduplication (same
// Workload::key() => one task, weights summed) lives here.
// Plain value type; not thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/workload.hpp"
#include "frontend/graph.hpp"

namespace atvoss::frontend {

struct TuneTask {
  Workload workload;
  int weight = 1;    // occurrences in the model
  std::string name;  // first layer that produced it, for reports (e.g. "layer2.0.conv2")
  // Every layer merged into the task with its occurrences (weight is their sum): a
  // per-layer setting (frontend/precision.hpp) may split them again.
  std::vector<std::pair<std::string, int>> layers;
};

// One layer in the order the model lists it. Consecutive layers of a model are taken
// to feed each other (plan/layout_choice.hpp); a standalone one (a job's explicit
// workload) belongs to no chain.
struct LayerStep {
  std::size_t task = 0;  // index into tasks()
  std::string name;
  int count = 1;
  bool standalone = false;
};

// A node of the model that is not tuned: an op without a lowering, a shape its template
// does not take, or a task whose space has no valid schedule on the target. It still
// runs, so it is timed by the named fallback rule (frontend/fallback.hpp) from its bytes.
struct FallbackNode {
  std::string name;    // the model's node name (ONNX node name, zoo layer name)
  std::string op;      // op type as the model names it, e.g. "MaxPool" or "transpose"
  std::string reason;  // why it is not tuned, for the user
  double bytes = 0;    // bytes it reads and writes once (0: shapes unknown)
  int count = 1;       // occurrences
};

class TaskSet {
 public:
  TaskSet() = default;
  TaskSet(std::string model, int batch) : model_(std::move(model)), batch_(batch) {}

  // Adds count occurrences of w; an equal workload already present gains the weight.
  void add(const Workload& w, const std::string& name, int count = 1);
  // As add(), for a workload that is not a layer of the model's chain.
  void add_standalone(const Workload& w, const std::string& name, int count = 1);
  // Records a node that is neither a task nor fused into one.
  void add_fallback(FallbackNode node);
  // Records a node that costs nothing of its own: fused into the task of node `into`
  // (an epilogue op), or, with `into` empty, a view or constant that moves no data.
  void add_folded(const std::string& name, const std::string& into);

  const std::string& model() const { return model_; }
  // Samples per run (images or sequences), for throughput = batch / end-to-end time.
  int batch() const { return batch_; }
  const std::vector<TuneTask>& tasks() const { return tasks_; }
  // Every add() and add_standalone() call, in order.
  const std::vector<LayerStep>& layer_order() const { return order_; }
  // Every node not tuned, in the order the model lists them.
  const std::vector<FallbackNode>& fallbacks() const { return fallbacks_; }
  // (node, node it is fused into or "" for a view), in model order.
  const std::vector<std::pair<std::string, std::string>>& folded() const { return folded_; }
  // The model's dataflow the tasks were derived from (graph.hpp).
  const Graph& graph() const { return graph_; }
  void set_graph(Graph g) { graph_ = std::move(g); }
  int total_occurrences() const;

 private:
  std::string model_;
  int batch_ = 1;
  void add_step(const Workload& w, const std::string& name, int count, bool standalone);

  std::vector<TuneTask> tasks_;
  std::vector<LayerStep> order_;
  std::vector<FallbackNode> fallbacks_;
  std::vector<std::pair<std::string, std::string>> folded_;
  Graph graph_;
};

// The layers of tasks as a chain: each layer reads the output of the chain layer before it
// (the first, and a standalone one, read the model's input), its output sized by its
// workload; each node's kernel is its layer's workload. How a zoo model, whose tables give
// layers and not tensors, gets its graph.
Graph chain_graph(const TaskSet& tasks);

// The task set of a graph: in node order, a node with a kernel adds it (de-duplicated), a
// node fused into another is folded into that node, a view is folded into nothing, and a
// node without a kernel is a FallbackNode with its reason and bytes. Keeps the graph.
TaskSet tasks_from_graph(Graph g, std::string model, int batch);

}  // namespace atvoss::frontend
