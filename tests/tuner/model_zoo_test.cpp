#include "tuner/model_zoo.hpp"

#include <gtest/gtest.h>

#include <set>

#include "core/error.hpp"

namespace atvoss::tuner {
namespace {

int occurrences(const TaskSet& s, const std::string& op) {
  int n = 0;
  for (const auto& t : s.tasks()) n += t.workload.op() == op ? t.weight : 0;
  return n;
}

const TuneTask* find(const TaskSet& s, const std::string& name) {
  for (const auto& t : s.tasks()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

TEST(ModelZoo, Resnet50HasFiftyThreeConvsAndOneFc) {
  const TaskSet s = zoo_model("resnet50");
  EXPECT_EQ(occurrences(s, "conv2d"), 53);  // 1 stem + 16 blocks x 3 + 4 downsample
  EXPECT_EQ(occurrences(s, "matmul"), 1);
  EXPECT_LT(s.tasks().size(), 54u);  // repeated blocks dedupe
  EXPECT_EQ(s.batch(), 1);
  std::set<std::string> keys;
  for (const auto& t : s.tasks()) EXPECT_TRUE(keys.insert(t.workload.key()).second) << t.name;
}

TEST(ModelZoo, Resnet50CarriesFusedChains) {
  const TaskSet s = zoo_model("resnet50");
  const TuneTask* conv3 = find(s, "layer1.0.conv3");
  ASSERT_NE(conv3, nullptr);
  EXPECT_EQ(conv3->workload.epilogue(), (std::vector<std::string>{"batchnorm", "add", "relu"}));
  const TuneTask* stem = find(s, "conv1");
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->workload.dim("stride"), 2);
  EXPECT_EQ(stem->workload.dim("R"), 7);
  EXPECT_EQ(s.unsupported().at("MaxPool"), 1);
}

TEST(ModelZoo, Resnet50Batch32ScalesN) {
  const TaskSet s = zoo_model("resnet50-b32");
  EXPECT_EQ(s.batch(), 32);
  for (const auto& t : s.tasks()) {
    if (t.workload.op() == "conv2d") EXPECT_EQ(t.workload.dim("N"), 32);
  }
}

TEST(ModelZoo, BertBaseWeightsByOccurrence) {
  const TaskSet s = zoo_model("bert-base");
  for (const auto& t : s.tasks()) {
    if (t.workload.op() == "matmul" && t.workload.epilogue() == std::vector<std::string>{"bias"}) {
      EXPECT_EQ(t.weight, 36);  // Q, K, V in 12 layers
    }
    if (t.workload.has_epilogue("gelu")) EXPECT_EQ(t.weight, 12);
  }
  EXPECT_EQ(occurrences(s, "batch_matmul"), 24);
  EXPECT_EQ(occurrences(s, "softmax"), 12);
}

TEST(ModelZoo, MobilenetHasDepthwiseAndResidualProjections) {
  const TaskSet s = zoo_model("mobilenet-v2");
  EXPECT_EQ(occurrences(s, "depthwise_conv2d"), 17);
  bool residual = false;
  for (const auto& t : s.tasks()) residual |= t.workload.has_epilogue("add");
  EXPECT_TRUE(residual);
}

TEST(ModelZoo, EveryNameExpandsAndUnknownIsBadInput) {
  for (const auto& n : zoo_names()) {
    SCOPED_TRACE(n);
    EXPECT_FALSE(zoo_model(n).tasks().empty());
  }
  try {
    zoo_model("resnet51");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_NE(std::string(e.what()).find("resnet50"), std::string::npos);
  }
}

}  // namespace
}  // namespace atvoss::tuner
