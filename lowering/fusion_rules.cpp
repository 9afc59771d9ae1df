// The fusion-rule registry (fusion_rules.hpp): built-in rules and added ones in core's
// NamedRegistry, the sets layered over it for a job, and the matching of a pattern
// against a workload's chain.
#include "lowering/fusion_rules.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/named_registry.hpp"
#include "lowering/fusion_rule_scope.hpp"

namespace atvoss::lowering {
namespace {

std::vector<FusionRule> built_ins() {
  return {
      {"elementwise",
       {"*",
        "bias|relu|relu6|leaky_relu|gelu|gelu_erf|sigmoid|silu|tanh|hardswish|hardsigmoid|mish|requantize|quantize|"
        "dequantize+"},
       1,
       0,
       0},
      {"any-epilogue", {"*", "*+"}, 2, 0, 0},
  };
}

NamedRegistry<FusionRule>& registry() {
  static NamedRegistry<FusionRule> r(built_ins());
  return r;
}

bool repeats(const std::string& step) { return !step.empty() && step.back() == '+'; }

// The alternatives of a step ("a|b+" -> {a, b}).
std::vector<std::string> alternatives(std::string step) {
  if (repeats(step)) step.pop_back();
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t bar = step.find('|', start);
    out.push_back(step.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
    if (bar == std::string::npos) return out;
    start = bar + 1;
  }
}

// Without building alternatives(): every lowering of a fused kernel asks this per step.
bool step_matches(const std::string& step, const std::string& op) {
  std::string_view rest(step);
  if (repeats(step)) rest.remove_suffix(1);
  for (;;) {
    const std::size_t bar = rest.find('|');
    const std::string_view alt = rest.substr(0, bar);
    if (alt == "*" || alt == op) return true;
    if (bar == std::string_view::npos) return false;
    rest.remove_prefix(bar + 1);
  }
}

// The longest run of the chain's ops from `at` (of size) that the steps from `step` match
// (matches(step, op index)); a "+" step may take more ops or hand over to the next step
// after each one.
template <class Matches>
std::size_t longest_match(const std::vector<std::string>& steps, std::size_t step, std::size_t size, std::size_t at,
                          const Matches& matches) {
  if (step == steps.size() || at == size || !matches(steps[step], at)) return at;
  std::size_t best = longest_match(steps, step + 1, size, at + 1, matches);
  if (repeats(steps[step])) best = std::max(best, longest_match(steps, step, size, at + 1, matches));
  return best;
}

void check_rule(const FusionRule& r, const std::string& where) {
  if (r.name.empty()) throw_bad_input(where + ": field 'name' must not be empty");
  check_fusion_pattern(r.pattern, where);
  if (r.fusion_level < 1 || r.fusion_level > 3) {
    throw_bad_input(where + ": field 'fusion_level' must be in [1, 3], got " + std::to_string(r.fusion_level));
  }
  if (r.max_fusion_depth < 0) {
    throw_bad_input(where + ": field 'max_fusion_depth' must be >= 1, got " + std::to_string(r.max_fusion_depth));
  }
  if (!(r.memory_budget_bytes >= 0)) {
    throw_bad_input(where + ": field 'memory_budget' must be a byte count >= 0");
  }
}

std::int64_t int_field(const Json& j, const char* field, const std::string& where, std::int64_t lo, std::int64_t hi) {
  const Json& v = j[field];
  if (!v.is_number_integer() || v.get<double>() < double(lo) || v.get<double>() > double(hi)) {
    throw_bad_input(where + ": field '" + field + "' must be an integer in [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "], got " + v.dump());
  }
  return v.get<std::int64_t>();
}

// What register_fusion_rule refuses: a malformed rule, or one taking a built-in's name.
void check_addable(const FusionRule& rule) {
  check_rule(rule, "fusion rule '" + rule.name + "'");
  if (registry().is_built_in(rule.name)) {
    throw_bad_input("fusion rule '" + rule.name + "': field 'name': '" + rule.name + "' is a built-in rule");
  }
}

}  // namespace

void register_fusion_rule(FusionRule rule) {
  check_addable(rule);
  registry().add(std::move(rule));
}

bool unregister_fusion_rule(const std::string& name) { return registry().remove(name); }

std::optional<FusionRule> registered_fusion_rule(const std::string& name) { return registry().find(name); }

bool is_built_in_fusion_rule(const std::string& name) { return registry().is_built_in(name); }

FusionRuleSet fusion_rule_set() {
  if (FusionRuleSet scoped = scoped_fusion_rule_set()) return scoped;
  return registry().all();
}

std::vector<FusionRule> fusion_rules() { return *fusion_rule_set(); }

FusionRuleSet fusion_rule_set_with(std::vector<FusionRule> rules) {
  for (const auto& rule : rules) check_addable(rule);
  // The registry's order: built-ins as they stand, then the rest by name.
  auto layered = std::make_shared<std::vector<FusionRule>>();
  std::map<std::string, FusionRule> added;
  for (const auto& rule : *fusion_rule_set()) {
    if (registry().is_built_in(rule.name)) {
      layered->push_back(rule);
    } else {
      added[rule.name] = rule;
    }
  }
  for (auto& rule : rules) {
    std::string name = rule.name;
    added.insert_or_assign(std::move(name), std::move(rule));
  }
  for (auto& [name, rule] : added) layered->push_back(std::move(rule));
  return layered;
}

void check_fusion_pattern(const std::vector<std::string>& pattern, const std::string& where) {
  if (pattern.size() < 2) {
    throw_bad_input(where + ": field 'pattern' must list the main op and at least one epilogue op");
  }
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const std::string field = where + ": field 'pattern[" + std::to_string(i) + "]'";
    if (i == 0 && repeats(pattern[i])) throw_bad_input(field + ": the main op cannot repeat ('+')");
    for (const auto& alt : alternatives(pattern[i])) {
      if (alt.empty()) throw_bad_input(field + ": '" + pattern[i] + "' has an empty op name");
    }
  }
}

std::size_t pattern_prefix(const std::vector<std::string>& pattern,
                           const std::vector<std::vector<std::string>>& chain) {
  const auto matches = [&](const std::string& step, std::size_t at) {
    return std::any_of(chain[at].begin(), chain[at].end(), [&](const std::string& n) { return step_matches(step, n); });
  };
  if (pattern.empty() || chain.empty() || !matches(pattern.front(), 0)) return 0;
  return longest_match(pattern, 1, chain.size(), 1, matches);
}

std::size_t fused_prefix(const FusionRule& rule, const std::string& op, const std::vector<std::string>& epilogue,
                         int fusion_level) {
  if (fusion_level < rule.fusion_level || !step_matches(rule.pattern.front(), op)) return 0;
  const auto matches = [&](const std::string& step, std::size_t at) { return step_matches(step, epilogue[at]); };
  const std::size_t n = longest_match(rule.pattern, 1, epilogue.size(), 0, matches);
  return rule.max_fusion_depth > 0 ? std::min<std::size_t>(n, rule.max_fusion_depth) : n;
}

FusionRule fusion_rule_from_json(const Json& j, const std::string& where) {
  if (!j.is_object()) throw_bad_input(where + " must be an object {name, pattern, max_fusion_depth, ...}");
  for (const auto& [k, v] : j.items()) {
    if (k != "name" && k != "pattern" && k != "max_fusion_depth" && k != "memory_budget" && k != "fusion_level") {
      throw_bad_input(where + ": unknown field '" + k +
                      "'; expected name, pattern, max_fusion_depth, memory_budget, fusion_level");
    }
  }
  for (const char* field : {"name", "pattern", "max_fusion_depth"}) {
    if (!j.contains(field)) throw_bad_input(where + ": missing field '" + field + "'");
  }
  FusionRule rule;
  if (!j["name"].is_string()) throw_bad_input(where + ": field 'name' must be a string");
  rule.name = j["name"].get<std::string>();
  if (is_built_in_fusion_rule(rule.name)) {
    throw_bad_input(where + ": field 'name': '" + rule.name +
                    "' is a built-in rule; name it by its name alone, or give it another name");
  }
  const Json& pattern = j["pattern"];
  if (!pattern.is_array()) throw_bad_input(where + ": field 'pattern' must be an array of op names");
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (!pattern[i].is_string()) {
      throw_bad_input(where + ": field 'pattern[" + std::to_string(i) + "]' must be a string, got " +
                      pattern[i].dump());
    }
    rule.pattern.push_back(pattern[i].get<std::string>());
  }
  rule.max_fusion_depth = int(int_field(j, "max_fusion_depth", where, 1, 64));
  if (j.contains("fusion_level")) rule.fusion_level = int(int_field(j, "fusion_level", where, 1, 3));
  if (j.contains("memory_budget")) {
    rule.memory_budget_bytes = double(int_field(j, "memory_budget", where, 1, std::int64_t{1} << 40));
  }
  check_rule(rule, where);
  return rule;
}

Json fusion_rule_to_json(const FusionRule& rule) {
  Json j = {{"name", rule.name},
            {"pattern", rule.pattern},
            {"max_fusion_depth", rule.max_fusion_depth == 0 ? 64 : rule.max_fusion_depth},
            {"fusion_level", rule.fusion_level}};
  if (rule.memory_budget_bytes > 0) j["memory_budget"] = static_cast<std::int64_t>(rule.memory_budget_bytes);
  return j;
}

Json declared_fusion_rules_in_force() {
  Json out = Json::array();
  for (const FusionRule& rule : *fusion_rule_set()) {
    if (!is_built_in_fusion_rule(rule.name)) out.push_back(fusion_rule_to_json(rule));
  }
  return out;
}

}  // namespace atvoss::lowering
