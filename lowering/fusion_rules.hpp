// Fusion rules: which epilogue ops of a workload fuse into its main kernel, as named
// rules in one registry. split_epilogue() (epilogue.hpp) asks every rule the
// schedule's fusion_level enables and keeps the longest chain one of them fuses, so a
// new fusion is added by registering a rule (from C++, or declared in a job spec:
// docs/job-spec.md), not by editing a switch. Built in, registered like any other:
//   elementwise  fusion_level 1: bias, relu, leaky_relu, gelu, gelu_erf, sigmoid, silu, tanh, hardswish, hardsigmoid,
//   mish, requantize any-epilogue fusion_level 2: every epilogue op (normalisation and residual too)
// A rule's pattern is the chain it fuses: pattern[0] matches the main op, the rest
// match the epilogue ops in order. A step is an op name, "a|b|c" (any of them) or "*"
// (any op); a step ending in "+" matches one or more consecutive ops. A rule fuses the
// longest prefix of the epilogue its pattern matches (a partial match fuses the ops
// matched so far), at most max_fusion_depth ops. Its memory budget bounds the on-chip
// bytes the fused epilogue may hold; a schedule over it is invalid (check_cube_buffers,
// lowering/internal/templates.hpp).
// The registry is the process's: built-ins and explicit registrations only. The rules a
// job declares are layered over it for that job (fusion_rule_set_with) and put in force
// on its threads by a FusionRuleScope (fusion_rule_scope.hpp), never registered.
// Thread-safety: every function may be called from any thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace atvoss::lowering {

struct FusionRule {
  std::string name;
  std::vector<std::string> pattern;  // main op, then epilogue steps (see above)
  int fusion_level = 1;              // the lowest fusion_level knob value it applies at, 1..3
  int max_fusion_depth = 0;          // most epilogue ops fused; 0: no limit
  double memory_budget_bytes = 0;    // on-chip bytes for the fused epilogue; 0: the target's UB
};

// Adds rule, replacing a registered one of the same name. bad_input naming the field
// if the name is empty or a built-in rule's, the pattern has no epilogue step or a
// malformed step, or a number is out of range.
void register_fusion_rule(FusionRule rule);
// Removes a registered rule; false if none had that name (built-ins cannot be removed).
bool unregister_fusion_rule(const std::string& name);
std::optional<FusionRule> registered_fusion_rule(const std::string& name);
bool is_built_in_fusion_rule(const std::string& name);
// A rule set: built-ins first, then the others by name, the order ties are broken in.
// Immutable, so a hot path (every kernel plan) shares it rather than copying.
using FusionRuleSet = std::shared_ptr<const std::vector<FusionRule>>;

// The rules in force on this thread: the set of the innermost FusionRuleScope open on it
// (fusion_rule_scope.hpp), else the registry's. What split_epilogue reads on every plan.
FusionRuleSet fusion_rule_set();
// The same list, copied.
std::vector<FusionRule> fusion_rules();
// The rules in force on this thread with `rules` layered over them: each replaces one of
// its name or joins the set; the registry is left as it is. bad_input as from
// register_fusion_rule. What a job's declared rules become (tuner/job_context.hpp).
FusionRuleSet fusion_rule_set_with(std::vector<FusionRule> rules);

// bad_input naming `where` and the field unless pattern is well formed: the main op, then at
// least one step; no empty op name; the main op not repeating.
void check_fusion_pattern(const std::vector<std::string>& pattern, const std::string& where);
// How many leading ops of a chain a pattern matches: chain[0] against pattern[0], then the
// rest step by step as above; 0 if chain[0] does not match. Each op goes by any of its names
// (an ONNX node's "Relu", its epilogue step "relu", its kernel's "conv2d"): the one grammar
// that fused_prefix and Python's FusionScheduler (python/atvoss/graph.py) both match with.
std::size_t pattern_prefix(const std::vector<std::string>& pattern, const std::vector<std::vector<std::string>>& chain);
// How many leading ops of epilogue the rule fuses into op at fusion_level (0 if the
// level is below the rule's or the main op does not match).
std::size_t fused_prefix(const FusionRule& rule, const std::string& op, const std::vector<std::string>& epilogue,
                         int fusion_level);

// A rule declared in JSON: {"name", "pattern", "max_fusion_depth", "memory_budget",
// "fusion_level"} (name, pattern and max_fusion_depth required; the name not a built-in's).
// bad_input naming `where` and the field on any problem.
FusionRule fusion_rule_from_json(const Json& j, const std::string& where);
// The same declaration: fusion_rule_from_json(fusion_rule_to_json(r), ...) gives r back,
// except that no limit (max_fusion_depth 0, which only C++ registrations use) is written as
// 64, the most a declaration allows.
Json fusion_rule_to_json(const FusionRule& rule);
// The rules in force on this thread that are not built in, as declarations: what a process
// sends along with work that another process lowers (a farm's workers, rpc/protocol.hpp),
// whose built-ins are the same. An empty array when only built-ins are in force.
Json declared_fusion_rules_in_force();

}  // namespace atvoss::lowering
