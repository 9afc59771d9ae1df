// Training roles: which forward layer each kernel of a training step belongs to, from the tags
// the step's kernels carry (execution::TrainingTag, set by frontend/training.hpp when it builds
// the backward pass, and copied by every plan that splits a kernel or adds its collectives),
// never from their names: a model's node may be called anything. Parallel plans split a step by
// layer: a layer's backward runs where its forward runs.
// Pure functions.
#pragma once

#include <vector>

#include "execution/exec_graph.hpp"

namespace atvoss::distributed {

using Role = frontend::TrainingRole;

struct TrainingRoles {
  std::vector<int> forward;  // per node: the forward node it belongs to (itself for a forward
                             // node, or its layer's first chunk), or -1 for the gradient of a
                             // graph input or of no layer
  std::vector<Role> role;    // per node; backward: a sum of gradients or a kernel not tuned
};

TrainingRoles training_roles(const execution::ExecGraph& step);

}  // namespace atvoss::distributed
