// Micro-batch workload: a kernel's workload at 1/m of the batch it runs, so that a pipeline's
// micro-batches (execution/pipeline.hpp) are timed by simulating the smaller kernel instead of
// dividing the whole kernel's time by m — a small kernel can leave cores idle, and its time
// does not shrink in proportion.
// The batch is split along the first dim that carries it, by op family: conv and depthwise
// (pooling) "N"; matmul the batch dim where there is one ("B"), else "M" (rows: batch x
// tokens); rows "M"; attention "B".
// Pure functions.
#pragma once

#include <optional>

#include "core/workload.hpp"

namespace atvoss::frontend {

// nullopt when that dim is not a multiple of micro_batches (or the op is a table or custom):
// the caller then scales the time.
std::optional<Workload> micro_batch_workload(const Workload& w, int micro_batches);

}  // namespace atvoss::frontend
