// FusionRuleScope and fusion_rule_set_with: a rule set layered over the registry is in
// force on the thread that opened its scope, for the scope's lifetime only, and never
// enters the registry; scopes nest; a layered rule replaces a registered one of its name.
#include "lowering/fusion_rule_scope.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "core/error.hpp"
#include "lowering/epilogue.hpp"

namespace atvoss::lowering {
namespace {

using Chain = std::vector<std::string>;
const Chain kChain = {"bias", "batchnorm", "relu"};

const FusionRule kWhole{"test-scoped", {"matmul", "bias", "batchnorm", "relu"}, 1, 0, 0};
const FusionRule kTwo{"test-scoped", {"matmul", "bias", "batchnorm"}, 1, 0, 0};

class FusionRuleScopeTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unregister_fusion_rule("test-scoped");
    unregister_fusion_rule("test-a");
  }
};

std::vector<std::string> names(const FusionRuleSet& set) {
  std::vector<std::string> out;
  for (const auto& r : *set) out.push_back(r.name);
  return out;
}

TEST_F(FusionRuleScopeTest, ALayeredSetIsInForceOnlyInItsScopeOnItsThread) {
  const FusionRuleSet layered = fusion_rule_set_with({kWhole});
  EXPECT_FALSE(registered_fusion_rule("test-scoped"));
  EXPECT_EQ(split_epilogue("matmul", kChain, 1).fused, (Chain{"bias"}));
  {
    const FusionRuleScope scope(layered);
    EXPECT_EQ(scoped_fusion_rule_set(), layered);
    EXPECT_EQ(split_epilogue("matmul", kChain, 1).rule, "test-scoped");
    EXPECT_EQ(split_epilogue("matmul", kChain, 1).fused, kChain);
    std::string other_thread_rule;
    std::thread([&] { other_thread_rule = split_epilogue("matmul", kChain, 1).rule; }).join();
    EXPECT_EQ(other_thread_rule, "elementwise");
    {
      const FusionRuleScope inner(fusion_rule_set_with({kTwo}));  // layered over the outer set
      EXPECT_EQ(split_epilogue("matmul", kChain, 1).fused, (Chain{"bias", "batchnorm"}));
    }
    EXPECT_EQ(split_epilogue("matmul", kChain, 1).fused, kChain);
    const FusionRuleScope none(nullptr);  // leaves the thread's rules as they are
    EXPECT_EQ(split_epilogue("matmul", kChain, 1).fused, kChain);
  }
  EXPECT_EQ(scoped_fusion_rule_set(), nullptr);
  EXPECT_EQ(split_epilogue("matmul", kChain, 1).rule, "elementwise");
  EXPECT_FALSE(registered_fusion_rule("test-scoped"));
}

TEST_F(FusionRuleScopeTest, ALayeredRuleReplacesOneOfItsNameInTheRegistrysOrder) {
  register_fusion_rule(kTwo);
  register_fusion_rule({"test-a", {"conv2d", "bias"}, 1, 0, 0});
  const FusionRuleSet layered = fusion_rule_set_with({kWhole});
  EXPECT_EQ(names(layered), (std::vector<std::string>{"elementwise", "any-epilogue", "test-a", "test-scoped"}));
  EXPECT_EQ(layered->back().pattern, kWhole.pattern);
  EXPECT_EQ(registered_fusion_rule("test-scoped")->pattern, kTwo.pattern);  // the registry's is kept
  const FusionRuleScope scope(layered);
  EXPECT_EQ(split_epilogue("matmul", kChain, 1).fused, kChain);
}

TEST_F(FusionRuleScopeTest, ABadLayeredRuleIsRefusedAsARegistrationWouldBe) {
  for (const FusionRule& bad :
       {FusionRule{"elementwise", {"matmul", "relu"}, 1, 0, 0}, FusionRule{"test-scoped", {"matmul"}, 1, 0, 0}}) {
    try {
      fusion_rule_set_with({bad});
      ADD_FAILURE() << bad.name << " accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input()) << e.what();
    }
  }
}

// What a farm client sends with its work: the rules in force beyond the built-ins, as
// declarations that read back as the same rules (no limit written as 64).
TEST_F(FusionRuleScopeTest, TheDeclaredRulesInForceTravelAsDeclarationsThatReadBackTheSame) {
  EXPECT_EQ(declared_fusion_rules_in_force(), Json::array());  // built-ins only
  const FusionRule budgeted{"test-a", {"conv2d|matmul", "bias", "relu+"}, 2, 3, 4096};
  const FusionRuleScope scope(fusion_rule_set_with({kWhole, budgeted}));
  const Json sent = declared_fusion_rules_in_force();
  ASSERT_EQ(sent.size(), 2u) << sent.dump();
  std::vector<FusionRule> back;
  for (const Json& j : sent) back.push_back(fusion_rule_from_json(j, "sent"));
  std::sort(back.begin(), back.end(), [](const FusionRule& a, const FusionRule& b) { return a.name < b.name; });
  EXPECT_EQ(back[0].name, "test-a");
  EXPECT_EQ(back[0].pattern, budgeted.pattern);
  EXPECT_EQ(back[0].fusion_level, 2);
  EXPECT_EQ(back[0].max_fusion_depth, 3);
  EXPECT_EQ(back[0].memory_budget_bytes, 4096);
  EXPECT_EQ(back[1].name, "test-scoped");
  EXPECT_EQ(back[1].pattern, kWhole.pattern);
  EXPECT_EQ(back[1].max_fusion_depth, 64);
  EXPECT_EQ(back[1].memory_budget_bytes, 0);
  // Under the rules read back, the chain fuses as under the originals.
  const FusionRuleScope again(fusion_rule_set_with(back));
  EXPECT_EQ(split_epilogue("matmul", kChain, 1).fused.size(), 3u);
}

}  // namespace
}  // namespace atvoss::lowering
