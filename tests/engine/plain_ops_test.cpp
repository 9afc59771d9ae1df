// The plain ops' behaviour the ONNX Runtime comparison cannot see (engine/plain_ops.hpp): values
// that would go subnormal, and the same outputs on one thread and on two.
#include "engine/plain_ops.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace atvoss::engine {
namespace {

// A padding mask adds -10000 to a score: its probability is 0, not a subnormal that every FMA
// of the next matmul would take a microcode assist on.
TEST(PlainOpsTest, MaskedSoftmaxScoresGiveZerosNotSubnormals) {
  const std::int64_t len = 128;
  std::vector<float> scores(2 * len), probs(2 * len);
  for (std::int64_t k = 0; k < 2 * len; ++k) scores[k] = (k % 3 == 0 ? -10000.0f : 0.0f) - float(k % 90);
  softmax(scores.data(), {2, len}, 1, probs.data(), false, 2);
  for (std::int64_t k = 0; k < 2 * len; ++k) {
    EXPECT_NE(std::fpclassify(probs[k]), FP_SUBNORMAL) << k << ": " << probs[k];
    if (k % 3 == 0) EXPECT_EQ(probs[k], 0.0f) << k;
  }
  double row = 0;
  for (std::int64_t k = 0; k < len; ++k) row += probs[k];
  EXPECT_NEAR(row, 1.0, 1e-5);
}

}  // namespace
}  // namespace atvoss::engine
