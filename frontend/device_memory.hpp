// DeviceMemory: whether a model fits the target's device DRAM (Target::device_memory_bytes)
// — its weights and its peak activations — so that a job says so before it tunes a model
// that could not run. An estimate from the task list alone (docs/hardware-facts.md
// section 5): every layer holds its own weights (a task of weight n is n layers);
// layers run one after another, so the live activations are at most one layer's
// inputs, residual inputs and output (tensors kept alive across layers, such as a
// skip connection over several layers, are not counted); bias and normalisation
// vectors and embedding tables (gather) are not counted as weights.
#pragma once

#include <string>

#include "core/target.hpp"
#include "frontend/task_set.hpp"
#include "frontend/training.hpp"

namespace atvoss::frontend {

struct MemoryFit {
  double weight_bytes = 0;
  // A training step's: every weight's gradient, its optimizer's state and, in mixed precision,
  // its fp32 master copy (training_state_bytes_per_weight); 0 at inference.
  double training_state_bytes = 0;
  double peak_activation_bytes = 0;
  std::string peak_layer;     // the task whose tensors set the peak
  double capacity_bytes = 0;  // 0: the target gives no capacity, nothing to check against

  double need_bytes() const { return weight_bytes + training_state_bytes + peak_activation_bytes; }
  bool fits() const { return capacity_bytes <= 0 || need_bytes() <= capacity_bytes; }
  // "weights 97.5 MB + peak activations 12.3 MB (conv1) = 110 MB of 64.0 GB device memory (0.2%)"
  std::string summary() const;
  // The warning a job prints before tuning; empty when the model fits or no capacity is known.
  std::string warning(const std::string& target_name) const;
};

// Bytes a training step keeps per weight element of dtype_bytes besides the weight: its
// gradient (dtype_bytes), the optimizer's state tensors (momentum 1, Adam 2; fp32 in mixed
// precision, else the weight's dtype) and, in mixed precision, the fp32 master weight.
double training_state_bytes_per_weight(const TrainingSetup& setup, int dtype_bytes);

// Bytes of the weight tensor of one occurrence of w (0 for ops without weights).
double weight_bytes(const Workload& w);
// Bytes live while one occurrence of w runs: its activation inputs, residual inputs and output.
double activation_bytes(const Workload& w);

// setup: how a training step updates (frontend/training.hpp); read only for a training step.
MemoryFit memory_fit(const TaskSet& tasks, const Target& target, const TrainingSetup& setup = {});

}  // namespace atvoss::frontend
