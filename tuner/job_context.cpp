// JobContext (job_context.hpp): the job's rules layered, never registered.
#include "tuner/job_context.hpp"

namespace atvoss::tuner {

JobContext JobContext::of(const JobSpec& spec) {
  // A snapshot even when the spec declares nothing: a rule registered by another thread
  // mid-run must not change what the job's later rounds fuse.
  return JobContext{lowering::fusion_rule_set_with(spec.fusion_rules)};
}

}  // namespace atvoss::tuner
