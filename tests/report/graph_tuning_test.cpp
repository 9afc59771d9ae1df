// The graph run's knobs searched (report/graph_tuning.hpp): never worse than the default point,
// finds the pipelining a two-stage chain on half the cores each gains from, respects the batch,
// and the same seed gives the same point.
#include "report/graph_tuning.hpp"

#include <gtest/gtest.h>

namespace atvoss::report {
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

}  // namespace
}  // namespace atvoss::report
