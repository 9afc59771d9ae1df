// FusionRuleScope: the fusion rules in force on one thread, for a while. split_epilogue
// reads fusion_rule_set() (fusion_rules.hpp) on every plan; while a scope is open on a
// thread, that is the scope's set instead of the process-wide registry's. A job opens one
// for its run with its declared rules layered over the registry's (tuner/job_context.hpp),
// so two jobs in one process, one after the other or at once on two threads, never see
// each other's rules, and the registry keeps only built-ins and explicit registrations.
//
// Why a thread-local and not a parameter: lowering is reached from the backends, the cost
// model's features, search and the tuner, through interfaces that code outside the
// library implements (OpLowering::plan, Backend); a rule set threaded through every one of
// those calls would change each of them for one input. The price is that work handed to
// another thread must take the set along: backend::MeasurePool captures the submitter's
// (scoped_fusion_rule_set) with each job and opens a scope around it. Any new hand-over
// of lowering work to a thread must do the same (docs/decisions/job-context.md).
//
// Scopes nest: closing one restores the set in force before it.
// Threading: a scope belongs to the thread that opened it and is closed there.
#pragma once

#include "lowering/fusion_rules.hpp"

namespace atvoss::lowering {

class FusionRuleScope {
 public:
  // Puts rules in force on this thread until the scope closes; null leaves the thread's
  // rules as they are (a job submitted from a thread with no scope).
  explicit FusionRuleScope(FusionRuleSet rules);
  ~FusionRuleScope();
  FusionRuleScope(const FusionRuleScope&) = delete;
  FusionRuleScope& operator=(const FusionRuleScope&) = delete;

 private:
  FusionRuleSet previous_;
};

// The set the innermost open scope put in force on this thread; null if none is open (the
// registry's rules are in force). What a hand-over to another thread captures.
FusionRuleSet scoped_fusion_rule_set();

}  // namespace atvoss::lowering
