// Training step: a model's (fused) graph grown into one step of training — the forward pass
// as it is, then the backward pass in reverse order, then an optimizer update per weight —
// so that the backward kernels are tasks the tuner tunes like any other, and the activations
// the backward pass reads stay live (the memory plan shows the training peak).
// Per kernel, its backward (backward_of):
//   conv          data gradient: a conv of the output gradient (stride-dilated) with the
//                 channels swapped (C <-> K), padding R-1-pad, stride 1; weight gradient: the
//                 implicit GEMM M=K, N=C/groups*R*S, K=N*OH*OW; depthwise: a depthwise data
//                 gradient and a reduce over the output positions per weight
//   matmul        dA = dY x B^T (M, K, N), dB = A^T x dY (K, N, M); batched alike
//   pools, rows   one pass of the op's own workload over the gradient (same bytes)
//   bias          a reduce of the output gradient per channel
// Fused epilogue ops (activations, residual adds) run in their kernel's backward; a residual
// input's gradient is the output gradient itself; gradients a tensor gets from several
// consumers are summed by an elementwise kernel. The update per weight is one memory-bound pass
// whose traffic is the optimizer's (TrainingSetup): SGD reads the weight and its gradient and
// writes the weight; momentum also reads and writes its velocity, Adam its two moments; mixed
// precision keeps fp32 master weights and state, writes the compute-dtype copy the next step
// reads, and pays loss scaling as one more read of the gradient (the overflow check). The
// gradients and the optimizer's state count in the device-memory fit (device_memory.hpp). Not
// modelled: training-mode BatchNormalization (the graph keeps it folded, as inference does).
// Pure functions.
#pragma once

#include <optional>
#include <string>

#include "core/workload.hpp"
#include "frontend/graph.hpp"
#include "frontend/task_set.hpp"

namespace atvoss::frontend {

struct BackwardKernels {
  std::optional<Workload> data_grad;    // the gradient of the main input
  std::optional<Workload> weight_grad;  // of the weight (or, batched, of the second operand)
  std::optional<Workload> bias_grad;    // when the forward kernel adds a bias
};

BackwardKernels backward_of(const Workload& forward);

// How a training step updates its weights: the optimizer, and whether it keeps fp32 master
// weights and state with loss scaling while computing in the model's dtype (fp16 or bf16).
struct TrainingSetup {
  enum class Optimizer { sgd, momentum, adam };
  Optimizer optimizer = Optimizer::sgd;
  bool mixed_precision = false;

  // "sgd", "momentum" or "adam"; bad_input naming `field` otherwise.
  static Optimizer optimizer_named(const std::string& name, const std::string& field);
};
std::string to_string(TrainingSetup::Optimizer optimizer);

// Bytes the update moves per weight element whose dtype takes dtype_bytes (see the top comment):
// 3, 5 or 7 passes of the weight's dtype; mixed: 8 + 2 x dtype_bytes for SGD (fp32 master read
// and written, the gradient read, the copy written), + 8 per fp32 state tensor, + the
// gradient's overflow check.
double update_bytes_per_weight(const TrainingSetup& setup, int dtype_bytes);
// The optimizer's state tensors per weight: SGD 0, momentum 1 (velocity), Adam 2 (moments).
int state_tensors(TrainingSetup::Optimizer optimizer);

// The update of the weight of forward after its gradient: an fp32 elementwise pass moving what
// the setup's update moves; nullopt for a kernel without weights.
std::optional<Workload> optimizer_update(const Workload& forward, const TrainingSetup& setup = {});

// Forward (as given, fused), backward and updates. REQUIRES: g went through the fusion pass.
Graph training_graph(const Graph& g, const TrainingSetup& setup = {});

// Whether the tasks are a training step (their graph has backward nodes).
bool is_training_step(const TaskSet& tasks);

// The training step of a model's tasks: its graph grown by training_graph, named
// "<model>-train", at the model's batch. A step already (it has backward nodes): unchanged.
TaskSet training_tasks(const TaskSet& model, const TrainingSetup& setup = {});

}  // namespace atvoss::frontend
