// Micro-batch workloads (frontend/micro_batch.hpp): the batch dim each op family carries is
// split, and a batch that does not split is left to the caller.
#include "frontend/micro_batch.hpp"

#include <gtest/gtest.h>

namespace atvoss::frontend {
namespace {

Workload wl(const Json& j) { return Workload::from_json(j); }

TEST(MicroBatch, EachFamilySplitsTheDimThatCarriesTheBatch) {
  const Workload conv =
      wl({{"op", "conv2d"}, {"dims", {{"N", 32}, {"C", 64}, {"H", 56}, {"W", 56}, {"K", 64}, {"R", 3}, {"S", 3}}}});
  EXPECT_EQ(micro_batch_workload(conv, 4)->dim("N"), 8);
  EXPECT_EQ(micro_batch_workload(conv, 4)->dim("C"), 64);
  const Workload mm = wl({{"op", "matmul"}, {"dims", {{"M", 256}, {"N", 1000}, {"K", 2048}}}});
  EXPECT_EQ(micro_batch_workload(mm, 8)->dim("M"), 32);
  EXPECT_EQ(micro_batch_workload(mm, 8)->dim("N"), 1000);
  const Workload bmm = wl({{"op", "batch_matmul"}, {"dims", {{"B", 12}, {"M", 128}, {"N", 128}, {"K", 64}}}});
  EXPECT_EQ(micro_batch_workload(bmm, 4)->dim("B"), 3);
  EXPECT_EQ(micro_batch_workload(bmm, 4)->dim("M"), 128);
  const Workload rows = wl({{"op", "softmax"}, {"dims", {{"M", 1536}, {"N", 128}}}});
  EXPECT_EQ(micro_batch_workload(rows, 2)->dim("M"), 768);
  EXPECT_EQ(micro_batch_workload(conv, 1)->key(), conv.key());
}

TEST(MicroBatch, ABatchThatDoesNotSplitIsLeftToTheCaller) {
  const Workload conv =
      wl({{"op", "conv2d"}, {"dims", {{"N", 1}, {"C", 64}, {"H", 56}, {"W", 56}, {"K", 64}, {"R", 3}, {"S", 3}}}});
  EXPECT_FALSE(micro_batch_workload(conv, 2));
  EXPECT_FALSE(micro_batch_workload(conv, 0));
}

}  // namespace
}  // namespace atvoss::frontend
