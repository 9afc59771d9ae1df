// JobContext: what a job adds to the process for its own run, kept to that job. Today
// that is the fusion rules its spec declares ("fusion_rules", docs/job-spec.md), layered
// over the built-ins and the explicitly registered rules as they stand when the job
// starts. The process-wide registries hold built-ins and explicit registrations only, so
// two jobs in one process (from Python, say), one after the other or at once on two
// threads, never see each other's rules, and no job's rule outlives it.
//
// run_job opens a JobScope for the whole run on its thread; the measuring pool carries the
// rules to its threads (lowering/fusion_rule_scope.hpp says how, and why a thread-local
// rather than a parameter: docs/decisions/job-context.md). The TunedModel carries the
// context, so that the report (report/job_report.hpp) lowers under the job's rules too.
// Anything added here that lowering or measuring reads must travel to the pool the same way.
// Plain value type (the rule set is shared and immutable): copy and share it freely.
#pragma once

#include "lowering/fusion_rule_scope.hpp"
#include "lowering/fusion_rules.hpp"
#include "tuner/job_spec.hpp"

namespace atvoss::tuner {

struct JobContext {
  // Every rule in force for the job; null (a context made by hand): the thread's own.
  lowering::FusionRuleSet fusion_rules;

  // The spec's declared rules over the rules in force on this thread. bad_input naming
  // the rule on a bad declaration.
  static JobContext of(const JobSpec& spec);
};

// Puts a job's context in force on the calling thread until the scope closes.
class JobScope {
 public:
  explicit JobScope(const JobContext& context) : fusion_rules_(context.fusion_rules) {}

 private:
  lowering::FusionRuleScope fusion_rules_;
};

}  // namespace atvoss::tuner
