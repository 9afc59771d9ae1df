#include "frontend/device_memory.hpp"

#include <cstdio>

#include "lowering/epilogue.hpp"
#include "lowering/lowering.hpp"

namespace atvoss::frontend {

double weight_bytes(const Workload& w) {
  auto d = [&](const char* n) { return static_cast<double>(w.dim(n)); };
  const double b = dtype_bytes(w.dtype());
  switch (w.family()) {
    // With a batch dim both operands are activations (attention's Q K^T, P V).
    case OpFamily::matmul:
      return w.info().batch_dim.empty() ? b * d("K") * d("N") : 0;
    case OpFamily::conv: {
      const double groups = w.dims().count("groups") ? d("groups") : 1;
      return b * d("K") * d("C") / groups * d("R") * d("S");
    }
    case OpFamily::depthwise:
      return w.info().window_weights ? b * d("C") * d("R") * d("S") : 0;
    case OpFamily::rows:
    case OpFamily::attention:
    case OpFamily::table:
    case OpFamily::custom:
      return 0;
  }
  return 0;
}

double activation_bytes(const Workload& w) {
  double residual = 0;
  for (const auto& op : w.epilogue()) residual += lowering::epilogue_extra_inputs(op);
  return w.compulsory_bytes() - weight_bytes(w) + residual * w.out_elements() * dtype_bytes(w.dtype());
}

std::string MemoryFit::summary() const {
  std::string s =
      "weights " + lowering::format_bytes(weight_bytes) +
      (training_state_bytes > 0 ? " + gradients and optimizer state " + lowering::format_bytes(training_state_bytes)
                                : "") +
      " + peak activations " + lowering::format_bytes(peak_activation_bytes) +
      (peak_layer.empty() ? "" : " (" + peak_layer + ")") + " = " + lowering::format_bytes(need_bytes());
  if (capacity_bytes <= 0) return s + " (the target gives no device memory capacity)";
  char share[32];
  const double pct = 100.0 * need_bytes() / capacity_bytes;
  std::snprintf(share, sizeof share, pct < 0.1 ? "<0.1%%" : "%.1f%%", pct);
  return s + " of " + lowering::format_bytes(capacity_bytes) + " device memory (" + share + ")";
}

std::string MemoryFit::warning(const std::string& target_name) const {
  if (fits()) return "";
  return "warning: the model does not fit in " + target_name + "'s device memory: " + summary() +
         "; tuning goes on, but the model could not run on this part as a whole";
}

double training_state_bytes_per_weight(const TrainingSetup& setup, int dtype_bytes) {
  const int states = state_tensors(setup.optimizer);
  if (!setup.mixed_precision) return double(1 + states) * dtype_bytes;
  return double(dtype_bytes) + 4.0 * states + 4.0;
}

MemoryFit memory_fit(const TaskSet& tasks, const Target& target, const TrainingSetup& setup) {
  MemoryFit f;
  f.capacity_bytes = double(target.device_memory_bytes);
  const Graph& g = tasks.graph();
  const bool training = is_training_step(tasks);
  for (const auto& t : tasks.tasks()) {
    // A training step's backward kernels read gradients and activations, not weights of their own.
    for (const auto& [layer, count] : t.layers) {
      const int node = g.node_index(layer);
      if (node >= 0 && g.nodes()[node].backward()) continue;
      const double bytes = count * weight_bytes(t.workload);
      f.weight_bytes += bytes;
      if (training) {
        const int size = dtype_bytes(t.workload.dtype());
        f.training_state_bytes += bytes / size * training_state_bytes_per_weight(setup, size);
      }
    }
    const double live = activation_bytes(t.workload);
    if (live > f.peak_activation_bytes) {
      f.peak_activation_bytes = live;
      f.peak_layer = t.name;
    }
  }
  return f;
}

}  // namespace atvoss::frontend
