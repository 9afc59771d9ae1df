// Einsum: an ONNX Einsum equation over one or two operands, planned once (at load) as what the
// engine computes it with: each operand's labels that appear nowhere else summed out, the two
// operands transposed to [batch, rows, depth] and [batch, depth, cols], one matmul per batch,
// and the product transposed to the output's labels (one operand: the sums and the transpose).
// "..." stands for the dims no label names (the same dims in both operands). Repeated labels
// within an operand (diagonals), a label of two sizes, and more than two operands are refused.
// Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/plain_ops.hpp"

namespace atvoss::engine {

struct EinsumPlan {
  std::vector<Shape> shapes;                    // each operand's
  std::vector<std::vector<bool>> summed;        // each operand's dims summed out first
  std::vector<Shape> kept;                      // each operand's shape after them
  std::vector<std::vector<std::int64_t>> perm;  // kept -> [batch, m, k] (first), [batch, k, n] (second)
  std::int64_t batch = 1, m = 1, n = 1, k = 1;
  Shape product;                        // the product's dims: batch, m, n labels (one operand: kept)
  std::vector<std::int64_t> to_output;  // product -> the output's label order
  Shape output;
};

// bad_input naming the field 'equation' when it is malformed, refused (see above) or does not
// fit the shapes.
EinsumPlan plan_einsum(const std::string& equation, const std::vector<Shape>& shapes);
// out = the equation over in (one pointer per operand), as planned; each product's rows shared
// among the threads.
void einsum(const EinsumPlan& p, const std::vector<const float*>& in, float* out, int threads = 1);

}  // namespace atvoss::engine
