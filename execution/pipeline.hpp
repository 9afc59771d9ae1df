// Stage pipelining on one device: a graph split into stages of consecutive nodes (balanced by
// device time) and a batch run as micro-batches, so that stage s of micro-batch n+1 overlaps
// stage s+1 of micro-batch n. Built as one unrolled ExecGraph the scheduler runs like any other
// (scheduler.hpp), with the pipeline's rules as dependencies:
//   - a stage runs one micro-batch at a time: stage s of micro-batch n+1 starts after stage s
//     of micro-batch n;
//   - double buffering: two buffers per stage boundary, so stage s of micro-batch n+2 starts
//     after stage s+1 of micro-batch n has read its input; the boundary tensors of the
//     micro-batches are buffers of the memory plan, so the two buffers count there.
// A micro-batch's kernel costs what the caller's MicroBatchCost says (the kernel simulated at
// the smaller batch, plan/graph_run.cpp); without one, or where it has no answer, 1/m of the
// whole batch's device time (its launch paid in full), which is optimistic where a
// micro-batch leaves cores idle. Pure functions.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "execution/exec_graph.hpp"

namespace atvoss::execution {

// The cost of node `node` of a graph at 1/micro_batches of its batch; nullopt: scale it.
using MicroBatchCost = std::function<std::optional<NodeCost>(int node, int micro_batches)>;

// Stage of each node: `stages` runs of consecutive nodes of about equal device time.
std::vector<int> split_stages(const ExecGraph& g, int stages);

// g unrolled over micro_batches with the pipeline's dependencies (stages >= 1, micro_batches >= 1;
// bad_input otherwise). Node "x" of micro-batch n is named "x#n" (just "x" with one micro-batch);
// each stage of each micro-batch ends in a zero-time barrier node "stage<s>#n".
ExecGraph pipelined(const ExecGraph& g, int stages, int micro_batches, const MicroBatchCost& cost = {});

}  // namespace atvoss::execution
