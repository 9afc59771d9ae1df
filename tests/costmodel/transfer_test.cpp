#include "costmodel/transfer_model.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "costmodel/metrics.hpp"
#include "costmodel/retrain_policy.hpp"
#include "synthetic.hpp"

namespace atvoss::costmodel {
namespace {

using testing::matmul;
using testing::synthetic_group;

TEST(RetrainPolicyTest, RetrainsOnTwentyPercentGrowthAboveTheMinimum) {
  RetrainPolicy p(RetrainOptions{0.2, 32});
  EXPECT_TRUE(p.use_heuristic(31));
  EXPECT_FALSE(p.should_retrain(31));
  EXPECT_TRUE(p.should_retrain(32));
  p.mark_trained(100);
  EXPECT_FALSE(p.use_heuristic(10));
  EXPECT_FALSE(p.should_retrain(100));
  EXPECT_FALSE(p.should_retrain(119));
  EXPECT_TRUE(p.should_retrain(120));
  p.mark_trained(120);
  EXPECT_FALSE(p.should_retrain(143));
  EXPECT_TRUE(p.should_retrain(144));
  EXPECT_EQ(p.last_trained(), 120u);
}

class TransferModelTest : public ::testing::Test {
 protected:
  Workload target_wl_ = matmul(2048, 2048, 256);
  std::vector<WorkloadGroup> others_ = {synthetic_group(matmul(1024, 1024, 1024), 300, 1),
                                        synthetic_group(matmul(4096, 512, 2048), 300, 2)};
  WorkloadGroup truth_ = synthetic_group(target_wl_, 300, 50);

  std::unique_ptr<TransferModel> make(bool with_prior) {
    auto prior = with_prior ? train_prior(ModelOptions{}, others_, target_wl_) : nullptr;
    return std::make_unique<TransferModel>(target_wl_, prior, make_cost_model("xgboost", 1));
  }
};

TEST_F(TransferModelTest, PriorRanksANewWorkloadFromTheFirstRound) {
  auto model = make(true);
  EXPECT_EQ(model->own_weight(), 0.0);
  const ModelMetrics m = evaluate(*model, std::span(&truth_, 1));
  EXPECT_GT(m.pairwise, 0.75);
}

TEST_F(TransferModelTest, OwnWeightGrowsWithOwnSamples) {
  auto model = make(true);
  WorkloadGroup own{target_wl_, truth_.target, {}};
  double last = 0;
  for (std::size_t n : {8, 16, 64, 256}) {
    own.samples.assign(truth_.samples.begin(), truth_.samples.begin() + long(n));
    model->train(std::span(&own, 1));
    SCOPED_TRACE(n);
    EXPECT_EQ(model->own_samples(), n);
    if (n < 16) {
      EXPECT_EQ(model->own_weight(), 0.0);  // below min_own_samples: no own fit yet
      continue;
    }
    EXPECT_NEAR(model->own_weight(), double(n) / (double(n) + 64.0), 1e-12);
    EXPECT_GT(model->own_weight(), last);
    last = model->own_weight();
  }
}

TEST_F(TransferModelTest, OtherWorkloadsAloneDoNotFitTheOwnModel) {
  auto model = make(false);
  model->train(others_);
  EXPECT_EQ(model->own_samples(), 0u);
  EXPECT_EQ(model->own_weight(), 0.0);  // that is the prior's job
  std::vector<WorkloadGroup> mixed = others_;
  mixed.push_back(truth_);
  model->train(mixed);
  EXPECT_EQ(model->own_samples(), truth_.samples.size());
  EXPECT_EQ(model->own_weight(), 1.0);  // no prior: the own model is all there is
}

TEST_F(TransferModelTest, WithoutAnyModelFallsBackToTheHeuristic) {
  auto model = make(false);
  EXPECT_TRUE(model->trained());
  std::vector<Schedule> s;
  for (const auto& x : truth_.samples) s.push_back(x.schedule);
  EXPECT_EQ(model->predict(target_wl_, truth_.target, s),
            make_cost_model("heuristic")->predict(target_wl_, truth_.target, s));
}

TEST_F(TransferModelTest, NoPriorWithoutOtherWorkloads) {
  EXPECT_EQ(train_prior(ModelOptions{}, std::span(&truth_, 1), target_wl_), nullptr);
}

}  // namespace
}  // namespace atvoss::costmodel
