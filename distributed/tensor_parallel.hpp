// Tensor parallelism over a training step (Megatron-LM, Shoeybi et al., 2019): each large
// MatMul — a matmul with a weight gradient, so a layer with weights of its own — is split over
// the t devices of a group (cards of one server), each holding 1/t of its weight: its forward,
// data-gradient, weight-gradient and update kernels take 1/t of their device time, and its
// weight gradient has 1/t of the bytes (so data parallelism above it reduces 1/t as much).
// The split needs a collective: the forward output is gathered (AllGather of its bytes), and
// the input gradient, a partial sum on every device, is reduced (AllReduce). Megatron pairs a
// column-split MatMul with a row-split one so that a pair needs one AllReduce each way; this
// model gives every split MatMul its own collectives, so its communication is an upper bound.
// MatMul + collective fusion (overlap_chunks > 1): the MatMul runs as that many chunks of its
// output tiles, and each chunk's collective starts as soon as the chunk is computed, while the
// next chunk computes (the first tiles' partial results go out while later tiles compute);
// the consumers wait for every chunk's collective.
// Other kernels (normalisations, softmax, elementwise, attention) run whole on every device.
// The group's ranks are symmetric: the step of rank 0 stands for all.
// Pure functions.
#pragma once

#include <vector>

#include "distributed/topology.hpp"
#include "execution/exec_graph.hpp"

namespace atvoss::distributed {

// The matmuls of the step that tensor parallelism splits (forward node indices).
std::vector<int> splittable_matmuls(const execution::ExecGraph& step);

// The step of rank 0 of a tensor-parallel group (devices group[0..t-1] of topology), with the
// collectives on its communication engine. group of one: the step unchanged. bad_input for a
// device outside the topology.
// only: the matmuls to split (a subset of splittable_matmuls; FlexFlow-style per-op choice:
// the others run whole on every rank, their weights replicated); nullptr: all of them.
execution::ExecGraph tensor_parallel(const execution::ExecGraph& step, const Topology& topology,
                                     const std::vector<int>& group, int overlap_chunks = 1,
                                     const std::vector<int>* only = nullptr);

}  // namespace atvoss::distributed
