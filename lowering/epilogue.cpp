#include "lowering/epilogue.hpp"

#include "lowering/fusion_rules.hpp"

namespace atvoss::lowering {

FusionSplit split_epilogue(const std::string& op, const std::vector<std::string>& epilogue, int fusion_level) {
  FusionSplit split;
  std::size_t fused = 0;
  for (const auto& rule : *fusion_rule_set()) {
    const std::size_t n = fused_prefix(rule, op, epilogue, fusion_level);
    if (n > fused) {
      fused = n;
      split.rule = rule.name;
      split.memory_budget_bytes = rule.memory_budget_bytes;
    }
  }
  split.fused.assign(epilogue.begin(), epilogue.begin() + std::ptrdiff_t(fused));
  split.unfused.assign(epilogue.begin() + std::ptrdiff_t(fused), epilogue.end());
  return split;
}

int full_fusion_level(const std::string& op, const std::vector<std::string>& epilogue) {
  for (int level = 0; level < 3; ++level) {
    if (split_epilogue(op, epilogue, level).unfused.empty()) return level;
  }
  return 3;
}

double epilogue_ops_per_element(const std::string& op) {
  if (op == "gelu" || op == "gelu_erf") return 8;
  if (op == "sigmoid") return 4;                         // exp, add, reciprocal, and the negation
  if (op == "silu") return 5;                            // x * sigmoid(x)
  if (op == "tanh") return 5;                            // exp, add, divide, the sign
  if (op == "mish") return 6;                            // exp, add, multiply, divide, multiply
  if (op == "hardswish") return 4;                       // a multiply-add, two compare-selects, a multiply
  if (op == "hardsigmoid") return 3;                     // a multiply-add, two compare-selects
  if (op == "leaky_relu") return 2;                      // compare-select and a multiply
  if (op == "relu6") return 2;                           // two compare-selects
  if (op == "requantize" || op == "quantize") return 3;  // -> int8: scale, round, saturate
  if (op == "dequantize") return 2;                      // int32 -> float: convert, scale
  if (op == "batchnorm") return 2;
  if (op == "layernorm") return 8;
  return 1;  // bias, relu, add
}

double epilogue_extra_inputs(const std::string& op) { return op == "add" ? 1 : 0; }

double epilogue_passes(const std::string& op) { return op == "layernorm" ? 2 : 1; }

}  // namespace atvoss::lowering
