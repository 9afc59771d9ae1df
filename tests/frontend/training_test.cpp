// Training steps (frontend/training.hpp): each op family's backward kernels have the shapes
// the forward op implies, the step's graph runs backward in reverse with an update per
// weight, gradients of a tensor read twice are summed, and the zoo's training steps tune.
#include "frontend/training.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "backend/targets.hpp"
#include "frontend/device_memory.hpp"
#include "frontend/graph_fusion.hpp"
#include "frontend/model_zoo.hpp"
#include "frontend/task_set.hpp"

namespace atvoss::frontend {
namespace {

Workload training_workload(const Json& j) { return Workload::from_json(j); }

TEST(Training, AConvsGradientsAreAConvWithChannelsSwappedAndAnImplicitGemm) {
  const Workload fwd = training_workload(
      {{"op", "conv2d"},
       {"dims", {{"N", 2}, {"C", 16}, {"H", 14}, {"W", 14}, {"K", 32}, {"R", 3}, {"S", 3}, {"stride", 1}, {"pad", 1}}},
       {"epilogue", {"bias", "relu"}}});
  const BackwardKernels b = backward_of(fwd);
  ASSERT_TRUE(b.data_grad && b.weight_grad && b.bias_grad);
  EXPECT_EQ(b.data_grad->op(), "conv2d");
  EXPECT_EQ(b.data_grad->dim("C"), 32);  // reads the output gradient's K channels
  EXPECT_EQ(b.data_grad->dim("K"), 16);  // writes the input's C
  EXPECT_EQ(b.data_grad->out_h(), 14);
  EXPECT_EQ(b.data_grad->out_w(), 14);
  EXPECT_TRUE(b.data_grad->epilogue().empty());
  EXPECT_EQ(b.weight_grad->op(), "matmul");
  EXPECT_EQ(b.weight_grad->dim("M"), 32);
  EXPECT_EQ(b.weight_grad->dim("N"), 16 * 3 * 3);
  EXPECT_EQ(b.weight_grad->dim("K"), 2 * 14 * 14);
  EXPECT_EQ(b.bias_grad->dim("M"), 32);
  // Strided: the data gradient covers the input, up to the rows the stride's floor dropped.
  const Workload strided = training_workload(
      {{"op", "conv2d"},
       {"dims", {{"N", 1}, {"C", 8}, {"H", 15}, {"W", 15}, {"K", 8}, {"R", 3}, {"S", 3}, {"stride", 2}, {"pad", 1}}}});
  const Workload dx = *backward_of(strided).data_grad;
  EXPECT_LE(std::abs(dx.out_h() - 15), 1);
  EXPECT_EQ(backward_of(strided).weight_grad->dim("K"), strided.out_h() * strided.out_w());
}

TEST(Training, AMatmulsGradientsAreTheTwoTransposedProducts) {
  const BackwardKernels b =
      backward_of(training_workload({{"op", "matmul"}, {"dims", {{"M", 128}, {"N", 768}, {"K", 3072}}}}));
  EXPECT_EQ(b.data_grad->to_json()["dims"], (Json{{"M", 128}, {"N", 3072}, {"K", 768}}));
  EXPECT_EQ(b.weight_grad->to_json()["dims"], (Json{{"M", 3072}, {"N", 768}, {"K", 128}}));
  const BackwardKernels bb = backward_of(
      training_workload({{"op", "batch_matmul"}, {"dims", {{"B", 12}, {"M", 128}, {"N", 64}, {"K", 128}}}}));
  EXPECT_EQ(bb.data_grad->to_json()["dims"], (Json{{"B", 12}, {"M", 128}, {"N", 128}, {"K", 64}}));
  EXPECT_EQ(bb.weight_grad->to_json()["dims"], (Json{{"B", 12}, {"M", 128}, {"N", 64}, {"K", 128}}));
  const auto update =
      optimizer_update(training_workload({{"op", "matmul"}, {"dims", {{"M", 128}, {"N", 768}, {"K", 3072}}}}));
  ASSERT_TRUE(update);
  // SGD on fp16 weights: the weight and its gradient read, the weight written, 6 bytes each,
  // as an fp32 elementwise pass moving 12 bytes per element (two values read, one written).
  EXPECT_EQ(update->dtype(), DType::float32);
  EXPECT_DOUBLE_EQ(update->compulsory_bytes(), 768.0 * 3072 * 6);
}

// What each optimizer's update moves per weight: passes of the weight's dtype, or with mixed
// precision fp32 master weights and state, the compute copy and the overflow check.
TEST(Training, EachOptimizersUpdateMovesItsStateAndMixedPrecisionItsMasterWeights) {
  using O = TrainingSetup::Optimizer;
  EXPECT_DOUBLE_EQ(update_bytes_per_weight({O::sgd, false}, 2), 6);
  EXPECT_DOUBLE_EQ(update_bytes_per_weight({O::momentum, false}, 2), 10);
  EXPECT_DOUBLE_EQ(update_bytes_per_weight({O::adam, false}, 4), 28);
  EXPECT_DOUBLE_EQ(update_bytes_per_weight({O::sgd, true}, 2), 14);  // 4+4 master, 2 grad, 2 copy, 2 check
  EXPECT_DOUBLE_EQ(update_bytes_per_weight({O::adam, true}, 2), 30);
  const Workload fc = training_workload({{"op", "matmul"}, {"dims", {{"M", 128}, {"N", 768}, {"K", 3072}}}});
  EXPECT_DOUBLE_EQ(optimizer_update(fc, {O::adam, true})->compulsory_bytes(), 768.0 * 3072 * 30);
  EXPECT_EQ(TrainingSetup::optimizer_named("adam", "optimizer"), O::adam);
  EXPECT_EQ(to_string(O::momentum), "momentum");
  try {
    TrainingSetup::optimizer_named("lamb", "job spec: field 'optimizer'");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_NE(std::string(e.what()).find("field 'optimizer'"), std::string::npos) << e.what();
  }
  // The step built with Adam updates with Adam's pass.
  const TaskSet adam = training_tasks(zoo_model("mlp"), {O::adam, false});
  const TaskSet sgd = training_tasks(zoo_model("mlp"));
  const auto update_of = [](const TaskSet& s) {
    for (const auto& t : s.tasks())
      if (t.name == "fc1.update") return t.workload.out_elements();
    return 0.0;
  };
  EXPECT_GT(update_of(sgd), 0);
  EXPECT_NEAR(update_of(adam), update_of(sgd) * 14 / 6, 1024);  // whole rows of 1024
}

// An update whose bytes have few factors of two still runs in rows of 1024 (narrow rows cost a
// ResNet-50 step's default a fifth of its speed), at most one row above what it moves.
TEST(Training, AnUpdatesRowsStayWideWhateverItsSize) {
  const Workload odd = training_workload({{"op", "matmul"}, {"dims", {{"M", 128}, {"N", 147}, {"K", 64}}}});
  const auto update = optimizer_update(odd, {TrainingSetup::Optimizer::momentum, true});
  ASSERT_TRUE(update);
  EXPECT_EQ(update->dim("N"), 1024);
  const double moved = 147.0 * 64 * update_bytes_per_weight({TrainingSetup::Optimizer::momentum, true}, 2);
  EXPECT_GE(update->compulsory_bytes(), moved);
  EXPECT_LT(update->compulsory_bytes(), moved + 1024 * 12);
}

// x -> conv1 (+relu fused) -> r -> conv2 -> y, and r -> conv3 -> z: r is read twice.
Graph two_headed() {
  Graph g;
  g.add_tensor("x", {1, 8, 8, 8}, 1024);
  for (const char* t : {"c1", "r", "y", "z"}) g.add_tensor(t, {1, 8, 8, 8}, 1024);
  const Workload conv = training_workload(
      {{"op", "conv2d"},
       {"dims", {{"N", 1}, {"C", 8}, {"H", 8}, {"W", 8}, {"K", 8}, {"R", 3}, {"S", 3}, {"stride", 1}, {"pad", 1}}}});
  g.node(g.add_node("conv1", "Conv", {"x"}, {"c1"})).kernel = conv;
  GraphNode& relu = g.node(g.add_node("relu", "Relu", {"c1"}, {"r"}));
  relu.step = "relu";
  g.node(g.add_node("conv2", "Conv", {"r"}, {"y"})).kernel = conv;
  g.node(g.add_node("conv3", "Conv", {"r"}, {"z"})).kernel = conv;
  g.mark_output("y");
  g.mark_output("z");
  fuse_graph(g);
  return g;
}

TEST(Training, TheStepRunsBackwardInReverseWithAnUpdatePerWeight) {
  const Graph t = training_graph(two_headed());
  std::vector<std::string> added;
  for (std::size_t i = 4; i < t.nodes().size(); ++i) added.push_back(t.nodes()[i].name);
  // conv3 and conv2 first (reverse order), the sum of r's two gradients, then conv1: its fused
  // relu's gradient, then its own (its input is the model's: no data gradient for it).
  const std::vector<std::string> expected = {"conv3.dgrad", "conv3.wgrad",  "conv3.update", "conv2.dgrad",
                                             "conv2.wgrad", "conv2.update", "grad_sum:r",   "conv1.epilogue_grad",
                                             "conv1.wgrad", "conv1.update"};
  EXPECT_EQ(added, expected);
  // conv1's weight gradient reads the summed gradient of its chain's output (r, past the
  // fused relu) and its input x; conv2's reads r: the activation stays live for the backward.
  auto reads = [&](const std::string& node) {
    std::vector<std::string> names;
    for (int in : t.nodes()[t.node_index(node)].inputs) names.push_back(t.tensors()[in].name);
    return names;
  };
  EXPECT_EQ(reads("conv1.epilogue_grad"), (std::vector<std::string>{"grad:r"}));
  EXPECT_EQ(reads("conv1.wgrad"), (std::vector<std::string>{"conv1.epilogue_grad:out", "x"}));
  // The relu's backward reads r's gradient and r, and writes the gradient before it: 3 passes.
  const GraphNode& relu_grad = t.nodes()[t.node_index("conv1.epilogue_grad")];
  const double r_bytes = t.tensors()[t.tensor_index("r")].bytes;
  ASSERT_TRUE(relu_grad.kernel);
  EXPECT_DOUBLE_EQ(relu_grad.kernel->compulsory_bytes(), 3 * r_bytes);
  EXPECT_EQ(reads("conv2.wgrad"), (std::vector<std::string>{"grad:y", "r"}));
  EXPECT_EQ(reads("grad_sum:r"), (std::vector<std::string>{"conv3.dgrad:out", "conv2.dgrad:out"}));
  const TaskSet s = tasks_from_graph(t, "step", 1);
  ASSERT_GE(s.tasks().size(), 2u);
  // conv2, conv3 and their data gradients (8 to 8 channels, 3x3, pad 1: the same conv) share
  // a task; conv1 fuses its relu.
  EXPECT_EQ(s.tasks()[1].weight, 4);
  for (const auto& f : s.fallbacks()) ADD_FAILURE() << "not tuned: " << f.name << " (" << f.reason << ")";
}

TEST(Training, TheZoosTrainingStepsHaveEveryLayersBackward) {
  const TaskSet step = zoo_model("resnet50-train");
  const TaskSet inference = zoo_model("resnet50-b32");
  int wgrads = 0, updates = 0, dgrads = 0;
  for (const auto& n : step.graph().nodes()) {
    const std::string& name = n.name;
    wgrads += name.ends_with(".wgrad") ? n.count : 0;
    updates += name.ends_with(".update") ? n.count : 0;
    dgrads += name.ends_with(".dgrad") ? n.count : 0;
    if (n.fused_into < 0 && !n.view) EXPECT_TRUE(n.kernel) << name;
  }
  EXPECT_EQ(wgrads, 54);  // 53 convs and the fc
  EXPECT_EQ(updates, 54);
  EXPECT_EQ(dgrads, inference.total_occurrences() - 1);  // every layer but the first
  EXPECT_GT(step.total_occurrences(), 3 * inference.total_occurrences() - 4);
  EXPECT_FALSE(zoo_model("bert-base-train").tasks().empty());
  // The step's weights are the model's: its backward kernels hold none of their own.
  const Target t = backend::load_target("ascend910");
  EXPECT_DOUBLE_EQ(memory_fit(step, t).weight_bytes, memory_fit(inference, t).weight_bytes);
}

// A training step keeps, per fp16 weight element, its gradient (2 bytes) and its optimizer's
// state: SGD nothing more, Adam two fp16 moments; in mixed precision the two moments and a
// master copy in fp32 (2 + 8 + 4: with the weight, the 16 bytes of the parallel plan). None at
// inference. The summary names it.
TEST(Training, TheStepKeepsGradientsAndOptimizerStateInDeviceMemory) {
  const Target t = backend::load_target("ascend910");
  const TaskSet inference = zoo_model("resnet50", 32);
  const TaskSet step = zoo_model("resnet50-train");
  const double weights = memory_fit(inference, t).weight_bytes;
  EXPECT_EQ(memory_fit(inference, t).training_state_bytes, 0);
  TrainingSetup adam;
  adam.optimizer = TrainingSetup::Optimizer::adam;
  TrainingSetup mixed = adam;
  mixed.mixed_precision = true;
  EXPECT_DOUBLE_EQ(memory_fit(step, t).training_state_bytes, weights);
  EXPECT_DOUBLE_EQ(memory_fit(step, t, adam).training_state_bytes, 3 * weights);
  EXPECT_DOUBLE_EQ(memory_fit(step, t, mixed).training_state_bytes, 7 * weights);
  EXPECT_DOUBLE_EQ(
      memory_fit(step, t, mixed).need_bytes() - memory_fit(inference, t).need_bytes(),
      7 * weights + memory_fit(step, t).peak_activation_bytes - memory_fit(inference, t).peak_activation_bytes);
  EXPECT_THAT(memory_fit(step, t, adam).summary(), ::testing::HasSubstr("gradients and optimizer state"));
  EXPECT_THAT(memory_fit(inference, t).summary(), ::testing::Not(::testing::HasSubstr("optimizer")));
}

}  // namespace
}  // namespace atvoss::frontend
