// Row-ops reference: the operand sizes and the double-precision reference of the host's row
// ops (rowops_space.hpp), which operands.hpp dispatches to so that the runner, the benchmark
// and the tests check them the same way as matmul.
//   elementwise  C = A + B (the zoo's residual and embedding adds), then the epilogue
//   map          C = A, then the epilogue (the epilogue is the work)
//   softmax      along N, inputs uniform in [-8, 8] so that the max subtraction matters
//   layernorm    along N, (x - mean) / sqrt(var + 1e-5) * gamma + beta; gamma in `scale`,
//                beta in `shift` (N values each); inputs in [2, 4], a mean far from 0
// Every element is checked (the reference is O(M N)).
#pragma once

#include "core/workload.hpp"
#include "host/operands.hpp"

namespace atvoss::host {

// The epsilon inside layernorm's square root (PyTorch's and ONNX's default).
inline constexpr double kLayernormEpsilon = 1e-5;

// REQUIRES: is_row_op(w).
OperandSizes row_operand_sizes(const Workload& w);

// Max over all elements of |c - ref| / max(|ref|, 1); infinity on a non-finite output.
double row_max_relative_error(const Workload& w, const Operands& o);

}  // namespace atvoss::host
