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
// consumers are summed by an elementwise kernel. Not modelled: training-mode BatchNormalization
// (the graph keeps it folded, as inference does) and Adam's moment tensors (the update reads
// the weight and its gradient once).
// Pure functions.
#pragma once

#include <optional>

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

// The update of the weight of forward after its gradient; nullopt for a kernel without weights.
std::optional<Workload> optimizer_update(const Workload& forward);

// Forward (as given, fused), backward and updates. REQUIRES: g went through the fusion pass.
Graph training_graph(const Graph& g);

// The training step of a model's tasks: its graph grown by training_graph, named
// "<model>-train", at the model's batch. A step already (it has backward nodes): unchanged.
TaskSet training_tasks(const TaskSet& model);

}  // namespace atvoss::frontend
