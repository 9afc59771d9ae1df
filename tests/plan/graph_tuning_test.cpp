// The graph run's knobs searched (plan/graph_tuning.hpp): never worse than the default point,
// finds the pipelining a two-stage chain on half the cores each gains from, respects the batch,
// and the same seed gives the same point.
#include "plan/graph_tuning.hpp"

#include <gtest/gtest.h>

#include "backend/targets.hpp"
#include "frontend/model_zoo.hpp"
#include "plan/graph_run.hpp"

namespace atvoss::plan {
namespace {

execution::ExecGraph half_chip_chain() {
  execution::ExecGraph g;
  const int x = g.add_buffer("x", 1024), h = g.add_buffer("h", 1024), y = g.add_buffer("y", 1024, true);
  g.add_node("A", "op", {10, 0, 8, execution::Unit::vector}, {x}, {h});
  g.add_node("B", "op", {10, 0, 8, execution::Unit::vector}, {h}, {y});
  return g;
}

TEST(GraphTuning, FindsThePipeliningAChainOnHalfTheChipGainsFrom) {
  const execution::Device d{16, 16, false};
  const GraphKnobs k = tune_graph_run(half_chip_chain(), d, 8);
  EXPECT_EQ(k.evaluations, 48);
  EXPECT_GE(k.stages, 2);
  EXPECT_GE(k.micro_batches, 2);
  EXPECT_LT(k.makespan_us, 20);  // the default point: 20 us
  EXPECT_DOUBLE_EQ(execution::simulate(graph_under(half_chip_chain(), k), d, k.scheduler).makespan_us, k.makespan_us);
  const GraphKnobs again = tune_graph_run(half_chip_chain(), d, 8);
  EXPECT_EQ(again.point, k.point);
}

TEST(GraphTuning, ABatchOfOneIsNeverSplitAndTheDefaultBoundsTheResult) {
  const execution::Device d{16, 16, false};
  const GraphKnobs k = tune_graph_run(half_chip_chain(), d, 1);
  EXPECT_EQ(k.micro_batches, 1);
  EXPECT_LE(k.makespan_us, 20);
}

// ResNet-50 at batch 32 in micro-batches of 4: each conv is simulated at batch 4, and many
// differ from an eighth of the batch's time — slower where the small kernel leaves cores idle,
// faster where its tensors now fit in L2 — which scaling alone would hide.
TEST(GraphTuning, MicroBatchKernelsAreResimulatedAtTheSmallerBatch) {
  const Target target = backend::load_target("ascend910");
  const frontend::TaskSet tasks = frontend::zoo_model("resnet50-b32");
  const ModelVariant v = vendor_default_variant(tasks, target);
  const execution::ExecGraph g = exec_graph_of(tasks, v, target);
  const execution::MicroBatchCost micro = micro_batch_cost(tasks, v, g, target);
  int resimulated = 0, slower = 0, faster = 0;
  for (int i = 0; i < int(g.nodes().size()); ++i) {
    const auto c = micro(i, 8);
    if (!c) continue;
    ++resimulated;
    const double scaled = g.nodes()[i].cost.device_us() / 8;
    slower += c->device_us() > scaled * 1.05;
    faster += c->device_us() < scaled * 0.95;
  }
  EXPECT_GE(resimulated, 50);
  EXPECT_GE(slower, 3);
  EXPECT_GE(faster, 1);
  EXPECT_FALSE(micro(0, 3));  // 32 does not split in 3
}

}  // namespace
}  // namespace atvoss::plan
