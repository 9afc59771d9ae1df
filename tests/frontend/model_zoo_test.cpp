#include "frontend/model_zoo.hpp"

#include <gtest/gtest.h>

#include <set>

#include "core/error.hpp"
#include "frontend/training.hpp"

namespace atvoss::frontend {
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
  // BatchNormalization folds into the conv: it leaves a bias, no kernel.
  EXPECT_EQ(conv3->workload.epilogue(), (std::vector<std::string>{"bias", "add", "relu"}));
  const TuneTask* stem = find(s, "conv1");
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->workload.dim("stride"), 2);
  EXPECT_EQ(stem->workload.dim("R"), 7);
  const TuneTask* pool = find(s, "maxpool");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->workload.op(), "max_pool2d");
  EXPECT_EQ(pool->workload.out_h(), 56);
  const TuneTask* avg = find(s, "avgpool");
  ASSERT_NE(avg, nullptr);
  EXPECT_EQ(avg->workload.dim("M"), 2048);
  EXPECT_EQ(avg->workload.dim("N"), 49);
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
  EXPECT_EQ(occurrences(s, "transpose"), 48);  // Q, K, V and context in 12 layers
  EXPECT_EQ(occurrences(s, "gather"), 3);
}

TEST(ModelZoo, MobilenetHasDepthwiseAndResidualProjections) {
  const TaskSet s = zoo_model("mobilenet-v2");
  EXPECT_EQ(occurrences(s, "depthwise_conv2d"), 17);
  bool residual = false;
  for (const auto& t : s.tasks()) residual |= t.workload.has_epilogue("add");
  EXPECT_TRUE(residual);
}

TEST(ModelZoo, Yolov7TinyHasItsFiftyEightConvsPoolsAndUpsamples) {
  const TaskSet s = zoo_model("yolov7-tiny");
  EXPECT_EQ(occurrences(s, "conv2d"), 58);     // yolov7-tiny.yaml: 55 Conv + 3 detect
  EXPECT_EQ(occurrences(s, "max_pool2d"), 6);  // 3 MP + SPP 5/9/13
  EXPECT_EQ(occurrences(s, "upsample"), 2);
  const TuneTask* stem = find(s, "backbone.0");
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->workload.dim("H"), 640);
  EXPECT_EQ(stem->workload.epilogue(), (std::vector<std::string>{"bias", "leaky_relu"}));  // BN folded
  const TuneTask* detect = find(s, "head.2.detect");
  ASSERT_NE(detect, nullptr);
  EXPECT_EQ(detect->workload.dim("K"), 255);
  EXPECT_EQ(detect->workload.dim("H"), 20);
}

TEST(ModelZoo, EsrganBodyHasTwentyThreeRrdbs) {
  const TaskSet s = zoo_model("esrgan-rrdb");
  EXPECT_EQ(occurrences(s, "conv2d"), 1 + 23 * 3 * 5 + 1);
  const TuneTask* conv5 = find(s, "body.0.rdb1.conv5");
  ASSERT_NE(conv5, nullptr);
  EXPECT_EQ(conv5->workload.dim("C"), 64 + 4 * 32);
  EXPECT_EQ(conv5->workload.dim("H"), 128);
  EXPECT_EQ(conv5->weight, 69);  // every dense block's conv5
}

TEST(ModelZoo, MoeExpertsGetTheTokensTheRoutingGives) {
  const TaskSet s = zoo_model("moe-block");
  EXPECT_EQ(occurrences(s, "attention"), 1);
  std::int64_t routed = 0;
  std::set<std::int64_t> counts;
  for (const auto& t : s.tasks()) {
    if (t.name.find(".w2") != std::string::npos) {
      routed += t.workload.dim("M") * t.weight;
      counts.insert(t.workload.dim("M"));
    }
  }
  EXPECT_EQ(routed, 2 * 512);                                          // top-2 of 512 tokens
  EXPECT_GT(counts.size(), 1u);                                        // the routing is not an even split
  EXPECT_EQ(zoo_model("moe-block").tasks().size(), s.tasks().size());  // seeded: the same every time
}

TEST(ModelZoo, AZooModelIsAChainGraphOfItsLayers) {
  const TaskSet s = zoo_model("mlp");
  const Graph& g = s.graph();
  ASSERT_EQ(g.nodes().size(), s.layer_order().size());
  for (std::size_t i = 1; i < g.nodes().size(); ++i) {
    // each layer reads what the layer before it wrote
    EXPECT_EQ(g.nodes()[i].inputs, g.nodes()[i - 1].outputs) << g.nodes()[i].name;
  }
  const auto& fc1 = s.tasks()[s.layer_order()[0].task].workload;
  EXPECT_DOUBLE_EQ(g.tensors()[g.nodes()[0].outputs[0]].bytes, fc1.out_elements() * 2);
}

// BERT-Large (24 layers, hidden 1024, 16 heads, FFN 4096) at sequence 128 and 512.
TEST(ModelZoo, BertLargeHasTwentyFourLayersOfItsShape) {
  const TaskSet s = zoo_model("bert-large");
  const TuneTask* q = find(s, "encoder.0.attention.query");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->weight, 72);  // Q, K, V in 24 layers
  EXPECT_EQ(q->workload.dim("M"), 128);
  EXPECT_EQ(q->workload.dim("K"), 1024);
  const TuneTask* ffn = find(s, "encoder.0.intermediate");
  ASSERT_NE(ffn, nullptr);
  EXPECT_EQ(ffn->workload.dim("N"), 4096);
  EXPECT_EQ(occurrences(s, "softmax"), 24);
  const TuneTask* scores = find(s, "encoder.0.attention.scores");
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(scores->workload.dim("B"), 16);
  EXPECT_EQ(scores->workload.dim("K"), 64);
  const TuneTask* long_scores = find(zoo_model("bert-large-s512"), "encoder.0.attention.scores");
  ASSERT_NE(long_scores, nullptr);
  EXPECT_EQ(long_scores->workload.dim("M"), 512);
  EXPECT_EQ(long_scores->workload.dim("N"), 512);
}

// A batch scales every layer's batch dimension (N, the rows of a token matmul, the heads of a
// batched one) and shows in the name; the zoo's own batch keeps the zoo's name and shapes.
TEST(ModelZoo, ABatchScalesEveryModelAndShowsInItsName) {
  const TaskSet mlp8 = zoo_model("mlp", 8);
  EXPECT_EQ(mlp8.model(), "mlp-b8");
  EXPECT_EQ(mlp8.batch(), 8);
  EXPECT_EQ(find(mlp8, "fc1")->workload.dim("M"), 8);
  EXPECT_EQ(zoo_model("mlp", 64).model(), "mlp");
  EXPECT_EQ(zoo_model("resnet50-b32", 0).model(), "resnet50-b32");
  const TaskSet r4 = zoo_model("resnet50", 4);
  EXPECT_EQ(r4.model(), "resnet50-b4");
  for (const auto& t : r4.tasks()) {
    if (t.workload.op() == "conv2d") EXPECT_EQ(t.workload.dim("N"), 4) << t.name;
  }
  const TaskSet bert = zoo_model("bert-base", 4);
  EXPECT_EQ(find(bert, "encoder.0.attention.query")->workload.dim("M"), 4 * 128);
  EXPECT_EQ(find(bert, "encoder.0.attention.scores")->workload.dim("B"), 4 * 12);
  EXPECT_EQ(find(bert, "encoder.0.attention.softmax")->workload.dim("M"), 4 * 12 * 128);
  EXPECT_EQ(find(zoo_model("mobilenet-v2", 2), "features.0")->workload.dim("N"), 2);
  EXPECT_EQ(find(zoo_model("yolov7-tiny", 2), "backbone.0")->workload.dim("N"), 2);
  EXPECT_EQ(find(zoo_model("yolov7-tiny", 2), "backbone.elan1.concat")->workload.dim("M"),
            2 * find(zoo_model("yolov7-tiny"), "backbone.elan1.concat")->workload.dim("M"));
  EXPECT_EQ(find(zoo_model("esrgan-rrdb", 3), "conv_first")->workload.dim("N"), 3);
  EXPECT_EQ(find(zoo_model("moe-block", 2), "moe.gate")->workload.dim("M"), 1024);
  try {
    zoo_model("mlp", 5000);
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_NE(std::string(e.what()).find("batch"), std::string::npos) << e.what();
  }
}

// Any zoo model's training step, at any batch; the named steps at another batch say so.
TEST(ModelZoo, AnyModelsTrainingStepAtAnyBatch) {
  const TaskSet step = training_tasks(zoo_model("mlp", 16));
  EXPECT_EQ(step.model(), "mlp-b16-train");
  EXPECT_EQ(step.batch(), 16);
  int wgrads = 0;
  for (const auto& n : step.graph().nodes()) wgrads += n.name.ends_with(".wgrad") ? n.count : 0;
  EXPECT_EQ(wgrads, 3);
  EXPECT_EQ(training_tasks(zoo_model("bert-large")).model(), "bert-large-train");
  EXPECT_EQ(zoo_model("resnet50-train", 8).model(), "resnet50-b8-train");
  EXPECT_EQ(training_tasks(zoo_model("resnet50-train")).model(), "resnet50-train");  // a step already
  EXPECT_EQ(zoo_model("resnet50-train", 8).batch(), 8);
}

TEST(ModelZoo, EveryNameExpandsAndUnknownIsBadInput) {
  for (const auto& n : zoo_names()) {
    SCOPED_TRACE(n);
    const TaskSet s = zoo_model(n);
    EXPECT_FALSE(s.tasks().empty());
    EXPECT_TRUE(s.fallbacks().empty()) << s.fallbacks().front().name;
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
}  // namespace atvoss::frontend
