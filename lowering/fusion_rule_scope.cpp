// FusionRuleScope (fusion_rule_scope.hpp): one thread-local slot, saved and restored.
#include "lowering/fusion_rule_scope.hpp"

#include <utility>

namespace atvoss::lowering {
namespace {

FusionRuleSet& thread_rules() {
  thread_local FusionRuleSet rules;
  return rules;
}

}  // namespace

FusionRuleScope::FusionRuleScope(FusionRuleSet rules) : previous_(thread_rules()) {
  if (rules) thread_rules() = std::move(rules);
}

FusionRuleScope::~FusionRuleScope() { thread_rules() = std::move(previous_); }

FusionRuleSet scoped_fusion_rule_set() { return thread_rules(); }

}  // namespace atvoss::lowering
