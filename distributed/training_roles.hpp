// Training roles: which forward layer each kernel of a training step belongs to, read from the
// names frontend/training.hpp gives backward kernels ("<layer>.dgrad", ".dgrad2", ".wgrad",
// ".bgrad", ".update", "<layer>.backward@<tensor>"; a "grad_sum:<tensor>" belongs to the
// tensor's producer; a collective a plan adds after kernel k, "<k>@<collective>", belongs
// with k). Parallel plans split a step by layer: a layer's backward runs where
// its forward runs.
// Pure functions.
#pragma once

#include <vector>

#include "execution/exec_graph.hpp"

namespace atvoss::distributed {

enum class Role { forward, data_grad, weight_grad, bias_grad, update, backward };

struct TrainingRoles {
  std::vector<int> forward;  // per node: the forward node it belongs to (itself for a forward
                             // node), or -1 for the gradient of a graph input
  std::vector<Role> role;    // per node; backward: a sum of gradients or a kernel not tuned
};

TrainingRoles training_roles(const execution::ExecGraph& step);

}  // namespace atvoss::distributed
