// The fusion pass over the graph: which nodes run inside another node's kernel, so that
// the task set (tasks_from_graph, task_set.hpp) holds one task per kernel with the fused
// ops as its chain (its workload's epilogue). Each rule is a pattern over nodes: a kernel
// node of one op family, then the nodes that read its output one after the other, along
// edges read by one node only (not a graph output). The rules, by name:
//   fold-into-weights  conv, then BatchNormalization or a Mul/Div by a constant, with at most
//                      a bias before it: folds into the conv's weights and bias, as every
//                      inference compiler folds it; no epilogue op of its own (a
//                      BatchNormalization gives the conv its bias)
//   silu               conv or matmul, then x * Sigmoid(x) (PyTorch's SiLU): both nodes, "silu"
//   gelu               conv or matmul, then a GELU written out (graph_patterns.hpp), x read by
//                      its nodes alone: all of them, "gelu_erf" (the erf form) or "gelu" (the
//                      tanh form); only where the caller gives the constants' values
//   conv-epilogue      conv, then activations, a residual Add ("add") or an Add of a constant
//                      ("bias"); no LayerNormalization: a conv tile holds a slice of channels,
//                      not the whole row it normalises
//   matmul-epilogue    matmul, then activations, Add ("add" or "bias") and LayerNormalization
//                      along the inner axis (MatMul + Add + LayerNorm + GELU is one chain)
//   rows-activations   elementwise or map, then activations
//   im2col-activations a conv run as its im2col matmul (a 1-D conv, uneven pads), then
//                      activations, a constant Add ("bias"), SiLU and GELUs
// A ConvTranspose's matmul (onnx_import.cpp) starts no chain: it writes each input pixel's
// window before the windows' scatter-add. Each epilogue op joins a chain at most once. The pass fixes what may be
// fused; the fusion-rule registry (lowering/fusion_rules.hpp) then decides, per schedule and its fusion_level, how much
// of each chain is fused (lowering/epilogue.hpp); the rest run as kernels of their own and are paid for as such.
// Thread-safety: mutates g only.
#pragma once

#include "frontend/graph.hpp"
#include "frontend/graph_patterns.hpp"

namespace atvoss::frontend {

// Sets fused_into and fused_by of every node fused into another's kernel and widens that
// kernel's epilogue. scalar: the constants' values (none: no GELU pattern is found).
void fuse_graph(Graph& g, const ScalarOf& scalar = {});

}  // namespace atvoss::frontend
