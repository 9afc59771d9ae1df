// Layout choice: a transpose is inserted and costed between conv layers whose layouts
// differ, never between ones that agree, and a task falls back to its neighbour's
// layout when the transpose costs more than its own layout saves.
#include "plan/layout_choice.hpp"

#include <gtest/gtest.h>

#include "frontend/precision.hpp"

namespace atvoss::plan {
namespace {

Workload conv(std::int64_t c, std::int64_t hw) {
  return Workload::from_json(
      Json{{"op", "conv2d"},
           {"dims", {{"N", 1}, {"C", c}, {"H", hw}, {"W", hw}, {"K", c}, {"R", 3}, {"S", 3}, {"pad", 1}}}});
}

Workload pool() {
  return Workload::from_json(
      Json{{"op", "max_pool2d"},
           {"dims", {{"N", 1}, {"C", 64}, {"H", 28}, {"W", 28}, {"R", 2}, {"S", 2}, {"stride", 2}, {"pad", 0}}}});
}

// conv a -> pool -> conv b: the pool passes its input's layout on.
frontend::TaskSet chain() {
  frontend::TaskSet m("chain", 1);
  m.add(conv(64, 28), "a");
  m.add(pool(), "pool");
  m.add(conv(64, 14), "b");
  return m;
}

struct CountingCost {
  double us;
  int* calls;
  double operator()(const Workload& w) const {
    ++*calls;
    EXPECT_EQ(w.op(), "transpose");
    return us;
  }
};

TEST(LayoutChoiceTest, ACheapTransposeIsPaidWhereTheTunedLayoutsDiffer) {
  int calls = 0;
  const auto choice = choose_layouts(
      chain(), {{{Layout::fractal, 10}, {Layout::nhwc, 5}}, {}, {{Layout::fractal, 10}, {Layout::nhwc, 20}}},
      CountingCost{1, &calls});
  EXPECT_EQ(choice.layouts[0], Layout::nhwc);
  EXPECT_FALSE(choice.layouts[1]);
  EXPECT_EQ(choice.layouts[2], Layout::fractal);
  ASSERT_EQ(choice.changes.size(), 1u);
  const LayoutChange& c = choice.changes[0];
  EXPECT_EQ(c.from_layer, "a");
  EXPECT_EQ(c.to_layer, "b");
  EXPECT_EQ(c.from, Layout::nhwc);
  EXPECT_EQ(c.to, Layout::fractal);
  EXPECT_EQ(c.transpose.dim("N"), 64);  // b's input channels, padded to C0: [HW, C1, C0] -> [C1, HW, C0]
  EXPECT_EQ(c.transpose.dim("M"), 14 * 14);
  EXPECT_DOUBLE_EQ(total_us(choice.changes), 1);
  EXPECT_GT(calls, 0);
}

TEST(LayoutChoiceTest, AnExpensiveTransposeMakesATaskFallBackToItsNeighboursLayout) {
  int calls = 0;
  const auto choice = choose_layouts(
      chain(), {{{Layout::fractal, 10}, {Layout::nhwc, 5}}, {}, {{Layout::fractal, 10}, {Layout::nhwc, 20}}},
      CountingCost{100, &calls});
  EXPECT_EQ(choice.layouts[0], Layout::fractal);  // 10 < 5 + 100
  EXPECT_EQ(choice.layouts[2], Layout::fractal);
  EXPECT_TRUE(choice.changes.empty());
}

TEST(LayoutChoiceTest, LayersThatAgreePayNothing) {
  int calls = 0;
  const auto choice = choose_layouts(chain(), {{{Layout::nhwc, 5}}, {}, {{Layout::nhwc, 20}}}, CountingCost{1, &calls});
  EXPECT_TRUE(choice.changes.empty());
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(layout_changes(chain(), {Layout::nchw, std::nullopt, Layout::nchw}, CountingCost{1, &calls}).empty());
  EXPECT_EQ(layout_changes(chain(), {Layout::nchw, std::nullopt, Layout::nhwc}, CountingCost{1, &calls}).size(), 1u);
}

TEST(LayoutChoiceTest, AStandaloneWorkloadIsNoLayerOfTheChain) {
  frontend::TaskSet m = chain();
  m.add_standalone(conv(32, 7), "extra");
  int calls = 0;
  const auto changes =
      layout_changes(m, {Layout::fractal, std::nullopt, Layout::fractal, Layout::nhwc}, CountingCost{1, &calls});
  EXPECT_TRUE(changes.empty());
}

TEST(LayoutChoiceTest, PrecisionKeepsTheLayerOrder) {
  frontend::TaskSet m("m", 1);
  m.add(conv(64, 28), "a");
  m.add(conv(64, 14), "b");
  m.add(conv(64, 28), "c");
  frontend::PrecisionSpec spec;
  spec.layers["b"] = DType::int8;
  const frontend::TaskSet q = frontend::apply_precision(m, spec);
  ASSERT_EQ(q.layer_order().size(), 3u);
  EXPECT_EQ(q.layer_order()[0].name, "a");
  EXPECT_EQ(q.layer_order()[1].name, "b");
  EXPECT_EQ(q.layer_order()[2].name, "c");
  EXPECT_EQ(q.tasks()[q.layer_order()[2].task].workload.dtype(), DType::float16);
  EXPECT_EQ(q.tasks()[q.layer_order()[1].task].workload.dtype(), DType::int8);
}

}  // namespace
}  // namespace atvoss::plan
