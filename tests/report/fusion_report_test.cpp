// Fusion report: ops before, kernels after and the GM bytes fusion saves, per rule, from
// the kernel plans of the chosen schedules.
#include "report/fusion_report.hpp"

#include <gtest/gtest.h>

#include "backend/backend.hpp"
#include "simulator/presets.hpp"

namespace atvoss::report {
namespace {

TEST(FusionReport, CountsKernelsAndBytesAFusionLevelSaves) {
  frontend::TaskSet model("net", 1);
  const Workload conv = Workload::from_json(
      Json{{"op", "conv2d"},
           {"dims", {{"N", 1}, {"C", 64}, {"H", 28}, {"W", 28}, {"K", 64}, {"R", 3}, {"S", 3}, {"pad", 1}}},
           {"epilogue", {"bias", "add", "relu"}}});
  model.add(conv, "block1");
  model.add(conv, "block2");
  model.add_fallback({"erf", "Erf", "no lowering for Erf", 1000, 1});
  const Target t = simulator::preset("ascend910");
  Schedule s = backend::required_default(conv, t);
  s.set("fusion_level", 0);
  const FusionReport none = fusion_report(model, {s}, t);
  EXPECT_EQ(none.ops_before, 2 * 4 + 1);
  EXPECT_EQ(none.kernels_after, 2 * 4 + 1);  // every epilogue op a kernel of its own
  EXPECT_EQ(none.kernels_removed(), 0);
  EXPECT_EQ(none.gm_bytes_saved, 0);
  EXPECT_TRUE(none.rules.empty());
  s.set("fusion_level", 2);
  const FusionReport fused = fusion_report(model, {s}, t);
  EXPECT_EQ(fused.ops_before, 9);
  EXPECT_EQ(fused.kernels_after, 2 + 1);
  EXPECT_EQ(fused.kernels_removed(), 6);
  ASSERT_EQ(fused.rules.size(), 1u);
  EXPECT_EQ(fused.rules[0].ops, 6);
  // Each fused op saves its kernel's read and write of the 64x28x28 fp16 output.
  EXPECT_DOUBLE_EQ(fused.gm_bytes_saved, 6 * 2 * 64 * 28 * 28 * 2.0);
  EXPECT_LT(fused.gm_bytes_after, none.gm_bytes_after);
  EXPECT_GT(fused.saved_share(), 0.3);
  EXPECT_EQ(fused.to_json()["kernels_removed"], 6);
}

}  // namespace
}  // namespace atvoss::report
