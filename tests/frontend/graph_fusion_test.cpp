// The fusion pass over a hand-built graph (frontend/graph_fusion.hpp): each rule's pattern,
// what stops a chain (a second reader, a graph output, a step the kernel does not take, a
// step already taken), and the task set derived from the fused graph (tasks_from_graph).
#include "frontend/graph_fusion.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/targets.hpp"
#include "frontend/fallback.hpp"
#include "frontend/task_set.hpp"

namespace atvoss::frontend {
namespace {

using Chain = std::vector<std::string>;

Workload conv(Chain epilogue = {}) {
  return Workload::from_json(
      {{"op", "conv2d"},
       {"dtype", "float16"},
       {"dims", {{"N", 1}, {"C", 16}, {"H", 14}, {"W", 14}, {"K", 32}, {"R", 3}, {"S", 3}, {"stride", 1}, {"pad", 1}}},
       {"epilogue", epilogue}});
}

Workload matmul(Chain epilogue = {}) {
  return Workload::from_json(
      {{"op", "matmul"}, {"dtype", "float16"}, {"dims", {{"M", 128}, {"N", 768}, {"K", 768}}}, {"epilogue", epilogue}});
}

Workload rows(const std::string& op, Chain epilogue = {}) {
  return Workload::from_json(
      {{"op", op}, {"dtype", "float16"}, {"dims", {{"M", 128}, {"N", 768}}}, {"epilogue", epilogue}});
}

// A graph built node by node: each node reads the named tensors and writes its name's ":out".
class GraphBuilder {
 public:
  GraphBuilder() {
    g.add_tensor("x");
    g.add_tensor("const", {768}, 1536, true);
  }
  GraphNode& node(const std::string& name, const std::string& op, std::vector<std::string> inputs,
                  const std::string& step = "", std::optional<Workload> kernel = std::nullopt) {
    for (auto& in : inputs) {
      if (in != "x" && in != "const") in += ":out";
    }
    GraphNode& n = g.node(g.add_node(name, op, inputs, {name + ":out"}));
    n.step = step;
    n.kernel = std::move(kernel);
    return n;
  }
  const GraphNode& at(const std::string& name) const {
    for (const auto& n : g.nodes()) {
      if (n.name == name) return n;
    }
    throw std::runtime_error("no node " + name);
  }
  int index(const std::string& name) const { return int(&at(name) - g.nodes().data()); }
  Graph g;
};

TEST(GraphFusion, BatchNormFoldsIntoTheConvAndReluJoinsItsChain) {
  GraphBuilder b;
  b.node("conv", "Conv", {"x"}, "", conv());
  b.node("bn", "BatchNormalization", {"conv"}, "batchnorm", rows("map", {"batchnorm"}));
  b.node("relu", "Relu", {"bn"}, "relu", rows("map", {"relu"}));
  fuse_graph(b.g);
  EXPECT_EQ(b.at("conv").kernel->epilogue(), (Chain{"bias", "relu"}));  // the BN's shift is the bias
  EXPECT_EQ(b.at("bn").fused_into, b.index("conv"));
  EXPECT_EQ(b.at("bn").fused_by, "fold-into-weights");
  EXPECT_EQ(b.at("relu").fused_into, b.index("conv"));
  EXPECT_EQ(b.at("relu").fused_by, "conv-epilogue");
}

TEST(GraphFusion, AResidualAddAndReluFuseIntoTheConvThatFeedsThem) {
  GraphBuilder b;
  b.node("skip", "Relu", {"x"}, "relu", rows("map", {"relu"}));
  b.node("conv", "Conv", {"skip"}, "", conv({"bias"}));
  b.node("add", "Add", {"conv", "skip"}, "add", rows("elementwise"));
  b.node("relu", "Relu", {"add"}, "relu", rows("map", {"relu"}));
  fuse_graph(b.g);
  EXPECT_EQ(b.at("conv").kernel->epilogue(), (Chain{"bias", "add", "relu"}));
  // skip's output is read twice (conv and add): nothing fuses into skip.
  EXPECT_EQ(b.at("skip").kernel->epilogue(), (Chain{"relu"}));
  EXPECT_EQ(b.at("skip").fused_into, -1);
}

TEST(GraphFusion, MatMulAddLayerNormGeluIsOneChain) {
  GraphBuilder b;
  b.node("mm", "MatMul", {"x"}, "", matmul());
  b.node("bias", "Add", {"mm", "const"}, "add", rows("elementwise"));
  b.node("ln", "LayerNormalization", {"bias"}, "layernorm", rows("layernorm"));
  b.node("gelu", "Gelu", {"ln"}, "gelu", rows("map", {"gelu"}));
  fuse_graph(b.g);
  EXPECT_EQ(b.at("mm").kernel->epilogue(), (Chain{"bias", "layernorm", "gelu"}));
  for (const char* n : {"bias", "ln", "gelu"}) EXPECT_EQ(b.at(n).fused_by, "matmul-epilogue") << n;
}

TEST(GraphFusion, AConvTakesNoLayerNormAndARowOpOnlyActivations) {
  GraphBuilder b;
  b.node("conv", "Conv", {"x"}, "", conv());
  b.node("ln", "LayerNormalization", {"conv"}, "layernorm", rows("layernorm"));
  b.node("mul", "Mul", {"ln", "x"}, "scale", rows("elementwise"));
  b.node("add", "Add", {"mul", "x"}, "add", rows("elementwise"));
  b.node("sig", "Sigmoid", {"add"}, "sigmoid", rows("map", {"sigmoid"}));
  fuse_graph(b.g);
  EXPECT_EQ(b.at("ln").fused_into, -1);
  EXPECT_TRUE(b.at("conv").kernel->epilogue().empty());
  EXPECT_EQ(b.at("add").fused_into, -1);  // an elementwise op takes no add after it
  EXPECT_EQ(b.at("sig").fused_into, b.index("add"));
  EXPECT_EQ(b.at("add").kernel->epilogue(), (Chain{"sigmoid"}));
}

TEST(GraphFusion, SiluIsTheSigmoidAndTheMulOfBoth) {
  GraphBuilder b;
  b.node("conv", "Conv", {"x"}, "", conv());
  b.node("sig", "Sigmoid", {"conv"}, "sigmoid", rows("map", {"sigmoid"}));
  b.node("mul", "Mul", {"conv", "sig"}, "scale", rows("elementwise"));
  fuse_graph(b.g);
  EXPECT_EQ(b.at("conv").kernel->epilogue(), (Chain{"silu"}));
  EXPECT_EQ(b.at("sig").fused_by, "silu");
  EXPECT_EQ(b.at("mul").fused_by, "silu");
}

TEST(GraphFusion, AGraphOutputAndARepeatedStepEndTheChain) {
  GraphBuilder b;
  b.node("mm", "MatMul", {"x"}, "", matmul());
  b.node("relu", "Relu", {"mm"}, "relu", rows("map", {"relu"}));
  b.node("clip", "Clip", {"relu"}, "relu", rows("map", {"relu"}));  // relu again: not twice
  b.node("conv", "Conv", {"x"}, "", conv());
  b.node("out_relu", "Relu", {"conv"}, "relu", rows("map", {"relu"}));
  b.g.mark_output("conv:out");  // the conv's output is read after the model: it must be stored
  fuse_graph(b.g);
  EXPECT_EQ(b.at("mm").kernel->epilogue(), (Chain{"relu"}));
  EXPECT_EQ(b.at("clip").fused_into, -1);
  EXPECT_EQ(b.at("out_relu").fused_into, -1);
}

TEST(GraphFusion, TheTaskSetHasAKernelPerUnfusedNodeAndAccountsForEveryOther) {
  GraphBuilder b;
  b.node("conv1", "Conv", {"x"}, "", conv());
  b.node("relu1", "Relu", {"conv1"}, "relu", rows("map", {"relu"}));
  b.node("flat", "Reshape", {"relu1"}).view = true;
  b.node("conv2", "Conv", {"flat"}, "", conv());
  b.node("relu2", "Relu", {"conv2"}, "relu", rows("map", {"relu"}));
  GraphNode& odd = b.node("odd", "NonMaxSuppression", {"relu2"});
  odd.reason = "no lowering for NonMaxSuppression";
  odd.bytes = 4096;
  fuse_graph(b.g);
  const TaskSet s = tasks_from_graph(b.g, "m", 1);
  ASSERT_EQ(s.tasks().size(), 1u);  // conv1 and conv2 are the same kernel: one task
  EXPECT_EQ(s.tasks()[0].weight, 2);
  EXPECT_EQ(s.tasks()[0].workload.epilogue(), (Chain{"relu"}));
  const std::vector<std::pair<std::string, std::string>> folded = {
      {"relu1", "conv1"}, {"flat", ""}, {"relu2", "conv2"}};
  EXPECT_EQ(s.folded(), folded);
  ASSERT_EQ(s.fallbacks().size(), 1u);
  EXPECT_EQ(s.fallbacks()[0].name, "odd");
  EXPECT_EQ(s.fallbacks()[0].bytes, 4096);
  EXPECT_EQ(s.graph().summary()["kernels"], 2);
  EXPECT_EQ(s.graph().summary()["fused_by"]["conv-epilogue"], 2);
}

TEST(GraphFusion, ANodeWithNoValidScheduleOnTheTargetIsNotTunedInTheGraphToo) {
  // A transpose whose 1M-element rows fit no buffer of the NPU: no valid schedule.
  GraphBuilder b;
  b.node("conv", "Conv", {"x"}, "", conv());
  b.node("shuffle", "Transpose", {"conv"}, "",
         Workload::from_json(
             {{"op", "transpose"}, {"dtype", "float16"}, {"dims", {{"M", 4}, {"N", 1048576}, {"inner", 1048576}}}}));
  const TaskSet s = without_unschedulable(tasks_from_graph(b.g, "m", 1), backend::load_target("ascend910"));
  ASSERT_EQ(s.fallbacks().size(), 1u);
  const GraphNode& shuffle = s.graph().nodes()[s.graph().node_index("shuffle")];
  EXPECT_FALSE(shuffle.kernel);
  EXPECT_EQ(shuffle.reason, s.fallbacks()[0].reason);
  EXPECT_TRUE(s.graph().nodes()[s.graph().node_index("conv")].kernel);
}

}  // namespace
}  // namespace atvoss::frontend
