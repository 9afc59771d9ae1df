// Fusion rules: the built-ins keep the fusion levels' meaning, a registered rule adds a
// fusion by pattern (alternatives, repeats, partial chains, a depth cap, a level), the
// longest fused chain wins, and a rule's memory budget invalidates schedules over it.
#include "lowering/fusion_rules.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/lowering.hpp"
#include "plan_target.hpp"

namespace atvoss::lowering {
namespace {

using Chain = std::vector<std::string>;

class FusionRulesTest : public ::testing::Test {
 protected:
  void TearDown() override { unregister_fusion_rule("test-rule"); }
};

TEST_F(FusionRulesTest, BuiltInsFuseElementwiseAtOneAndEverythingAtTwo) {
  const Chain chain = {"bias", "relu", "batchnorm", "add", "relu"};
  EXPECT_TRUE(split_epilogue("conv2d", chain, 0).fused.empty());
  EXPECT_EQ(split_epilogue("conv2d", chain, 1).fused, (Chain{"bias", "relu"}));
  EXPECT_EQ(split_epilogue("conv2d", chain, 1).rule, "elementwise");
  EXPECT_EQ(split_epilogue("conv2d", chain, 2).fused, chain);
  EXPECT_EQ(split_epilogue("conv2d", chain, 2).rule, "any-epilogue");
  EXPECT_EQ(full_fusion_level("matmul", {"bias", "gelu"}), 1);
  EXPECT_EQ(full_fusion_level("matmul", {"bias", "layernorm"}), 2);
}

TEST_F(FusionRulesTest, PatternStepsMatchNamesAlternativesAndRepeats) {
  const FusionRule rule{"test-rule", {"conv2d|matmul", "batchnorm", "add|relu+"}, 1, 0, 0};
  EXPECT_EQ(fused_prefix(rule, "conv2d", {"batchnorm", "add", "relu", "relu", "gelu"}, 1), 4u);
  EXPECT_EQ(fused_prefix(rule, "matmul", {"batchnorm", "gelu"}, 1), 1u);    // partial chain
  EXPECT_EQ(fused_prefix(rule, "matmul", {"relu", "batchnorm"}, 1), 0u);    // wrong first op
  EXPECT_EQ(fused_prefix(rule, "depthwise_conv2d", {"batchnorm"}, 1), 0u);  // main op differs
  EXPECT_EQ(fused_prefix(rule, "conv2d", {"batchnorm"}, 0), 0u);            // below its level
  FusionRule capped = rule;
  capped.max_fusion_depth = 2;
  EXPECT_EQ(fused_prefix(capped, "conv2d", {"batchnorm", "add", "relu"}, 1), 2u);
}

TEST_F(FusionRulesTest, ARegisteredRuleWinsWhereItFusesMore) {
  const Chain chain = {"bias", "batchnorm", "relu"};
  EXPECT_EQ(split_epilogue("matmul", chain, 1).fused, (Chain{"bias"}));
  register_fusion_rule({"test-rule", {"matmul", "bias", "batchnorm", "relu"}, 1, 0, 4096});
  const FusionSplit s = split_epilogue("matmul", chain, 1);
  EXPECT_EQ(s.fused, chain);
  EXPECT_EQ(s.rule, "test-rule");
  EXPECT_DOUBLE_EQ(s.memory_budget_bytes, 4096);
  EXPECT_EQ(split_epilogue("conv2d", chain, 1).fused, (Chain{"bias"}));  // pattern[0] is matmul
  EXPECT_EQ(split_epilogue("matmul", chain, 2).rule, "any-epilogue");    // a tie: built-in first
  EXPECT_TRUE(unregister_fusion_rule("test-rule"));
  EXPECT_EQ(split_epilogue("matmul", chain, 1).fused, (Chain{"bias"}));
}

TEST_F(FusionRulesTest, MemoryBudgetInvalidatesSchedulesOverIt) {
  const Target t = testing::small_target();
  const Workload w = Workload::from_json(
      parse_json(R"({"op":"matmul","dims":{"M":256,"N":256,"K":256},"epilogue":["bias","batchnorm"]})", "w"));
  Schedule s({{"tile_m", 64},
              {"tile_n", 64},
              {"tile_k", 64},
              {"k_steps", 1},
              {"async_copy_depth", 1},
              {"tile_order", 0},
              {"fusion_level", 1}});
  ASSERT_TRUE(plan_kernel(w, t, s).verdict.ok) << plan_kernel(w, t, s).verdict.reason;
  // 64 x 64 outputs at fp16 with one buffer: 8 KB of UB for the fused epilogue.
  register_fusion_rule({"test-rule", {"matmul", "bias", "batchnorm"}, 1, 0, 16 * 1024});
  EXPECT_TRUE(plan_kernel(w, t, s).verdict.ok) << plan_kernel(w, t, s).verdict.reason;
  s.set("tile_m", 256);
  s.set("tile_n", 256);
  const KernelPlan big = plan_kernel(w, t, s);
  EXPECT_FALSE(big.verdict.ok);
  EXPECT_NE(big.verdict.reason.find("memory budget of fusion rule 'test-rule'"), std::string::npos)
      << big.verdict.reason;
}

TEST_F(FusionRulesTest, BadRulesAreRefusedNamingTheField) {
  auto refused = [](FusionRule r, const std::string& field) {
    try {
      register_fusion_rule(std::move(r));
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  refused({"", {"matmul", "relu"}, 1, 0, 0}, "'name'");
  refused({"elementwise", {"matmul", "relu"}, 1, 0, 0}, "built-in");
  refused({"test-rule", {"matmul"}, 1, 0, 0}, "'pattern'");
  refused({"test-rule", {"matmul+", "relu"}, 1, 0, 0}, "'pattern[0]'");
  refused({"test-rule", {"matmul", "|relu"}, 1, 0, 0}, "'pattern[1]'");
  refused({"test-rule", {"matmul", "relu"}, 0, 0, 0}, "'fusion_level'");
  refused({"test-rule", {"matmul", "relu"}, 1, -1, 0}, "'max_fusion_depth'");
  refused({"test-rule", {"matmul", "relu"}, 1, 0, -5}, "'memory_budget'");
  EXPECT_FALSE(registered_fusion_rule("test-rule"));
}

}  // namespace
}  // namespace atvoss::lowering
