// TaskSet: the distinct workloads ("tasks") of a model, each with its weight —
// the number of times the model runs it — plus the ops that were seen but are not
// tuned. Weighted end-to-end time is sum(weight * time); the task scheduler
// minimises it. Both the model zoo and the ONNX importer produce a TaskSet, so
// deduplication (same Workload::key() => one task, weights summed) lives here.
// Plain value type; not thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/workload.hpp"

namespace atvoss::tuner {

struct TuneTask {
  Workload workload;
  int weight = 1;    // occurrences in the model
  std::string name;  // first layer that produced it, for reports (e.g. "layer2.0.conv2")
  // Every layer merged into the task with its occurrences (weight is their sum): a
  // per-layer setting (tuner/precision.hpp) may split them again.
  std::vector<std::pair<std::string, int>> layers;
};

// One layer in the order the model lists it. Consecutive layers of a model are taken
// to feed each other (tuner/layout_choice.hpp); a standalone one (a job's explicit
// workload) belongs to no chain.
struct LayerStep {
  std::size_t task = 0;  // index into tasks()
  std::string name;
  int count = 1;
  bool standalone = false;
};

class TaskSet {
 public:
  TaskSet() = default;
  TaskSet(std::string model, int batch) : model_(std::move(model)), batch_(batch) {}

  // Adds count occurrences of w; an equal workload already present gains the weight.
  void add(const Workload& w, const std::string& name, int count = 1);
  // As add(), for a workload that is not a layer of the model's chain.
  void add_standalone(const Workload& w, const std::string& name, int count = 1);
  // Records an op that is neither a task nor fused into one (e.g. "MaxPool").
  void add_unsupported(const std::string& op_type, int count = 1);

  const std::string& model() const { return model_; }
  // Samples per run (images or sequences), for throughput = batch / end-to-end time.
  int batch() const { return batch_; }
  const std::vector<TuneTask>& tasks() const { return tasks_; }
  // Every add() and add_standalone() call, in order.
  const std::vector<LayerStep>& layer_order() const { return order_; }
  // op type -> occurrences, sorted by name.
  const std::map<std::string, int>& unsupported() const { return unsupported_; }
  int total_occurrences() const;

 private:
  std::string model_;
  int batch_ = 1;
  void add_step(const Workload& w, const std::string& name, int count, bool standalone);

  std::vector<TuneTask> tasks_;
  std::vector<LayerStep> order_;
  std::map<std::string, int> unsupported_;
};

}  // namespace atvoss::tuner
