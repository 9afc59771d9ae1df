#include "costmodel/workload_groups.hpp"

#include <gtest/gtest.h>

#include "synthetic.hpp"

namespace atvoss::costmodel {
namespace {

using testing::matmul;
using testing::test_target;

Trial sample(int tile, double us) { return {Schedule({{"tile_m", tile}}), Status::ok, us}; }

TEST(WorkloadGroupsTest, BuilderGroupsByWorkloadAndCapsEach) {
  GroupBuilder b(2);
  const Workload w1 = matmul(256, 256, 256), w2 = matmul(512, 512, 512);
  EXPECT_TRUE(b.add(w1, test_target(), sample(16, 3)));
  EXPECT_TRUE(b.add(w2, test_target(), sample(16, 9)));
  EXPECT_TRUE(b.add(w1, test_target(), sample(32, 2)));
  EXPECT_FALSE(b.add(w1, test_target(), sample(64, 1)));  // w1 is full
  EXPECT_EQ(b.samples(), 3u);
  const auto groups = b.take();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(count_samples(groups), 3u);
  for (const auto& g : groups) EXPECT_EQ(g.samples.size(), g.workload == w1 ? 2u : 1u);
  EXPECT_EQ(b.samples(), 0u);
}

TEST(WorkloadGroupsTest, HoldoutSplitIsSeededAndKeepsEverySample) {
  GroupBuilder b;
  for (int i = 0; i < 200; ++i) b.add(matmul(256, 256, 256), test_target(), sample(i + 1, i + 1));
  const auto all = b.take();
  std::vector<WorkloadGroup> train1, test1, train2, test2;
  split_holdout(all, 0.25, 7, train1, test1);
  split_holdout(all, 0.25, 7, train2, test2);
  EXPECT_EQ(train1[0].samples.size() + test1[0].samples.size(), 200u);
  EXPECT_GT(test1[0].samples.size(), 25u);
  EXPECT_LT(test1[0].samples.size(), 75u);
  ASSERT_EQ(test1[0].samples.size(), test2[0].samples.size());
  for (std::size_t i = 0; i < test1[0].samples.size(); ++i) {
    EXPECT_EQ(test1[0].samples[i].schedule, test2[0].samples[i].schedule);
  }
}

TEST(WorkloadGroupsTest, KnobImportanceSumsAKnobsFeatures) {
  const std::vector<FeatureScore> scores = {
      {"knob_tile_m", 2}, {"log2_tile_m", 1}, {"knob_tile_n", 4}, {"est_time_us", 10}};
  const auto k = knob_importance(scores, {});
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].first, "tile_n");
  EXPECT_DOUBLE_EQ(k[1].second, 3.0);
}

}  // namespace
}  // namespace atvoss::costmodel
