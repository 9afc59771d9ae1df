#include "lowering/epilogue.hpp"

namespace atvoss::lowering {
namespace {
int level_needed(const std::string& op) {
  if (op == "bias" || op == "relu" || op == "leaky_relu" || op == "gelu" || op == "sigmoid" ||
      op == "silu" || op == "requantize" || op == "quantize" || op == "dequantize") {
    return 1;
  }
  return 2;  // batchnorm, add, layernorm
}
}  // namespace

FusionSplit split_epilogue(const std::vector<std::string>& epilogue, int fusion_level) {
  FusionSplit split;
  bool blocked = false;
  for (const auto& op : epilogue) {
    blocked = blocked || level_needed(op) > fusion_level;
    (blocked ? split.unfused : split.fused).push_back(op);
  }
  return split;
}

double epilogue_ops_per_element(const std::string& op) {
  if (op == "gelu") return 8;
  if (op == "sigmoid") return 4;  // exp, add, reciprocal, and the negation
  if (op == "silu") return 5;     // x * sigmoid(x)
  if (op == "leaky_relu") return 2;  // compare-select and a multiply
  if (op == "requantize" || op == "quantize") return 3;  // -> int8: scale, round, saturate
  if (op == "dequantize") return 2;  // int32 -> float: convert, scale
  if (op == "batchnorm") return 2;
  if (op == "layernorm") return 8;
  return 1;  // bias, relu, add
}

double epilogue_extra_inputs(const std::string& op) { return op == "add" ? 1 : 0; }

double epilogue_passes(const std::string& op) { return op == "layernorm" ? 2 : 1; }

}  // namespace atvoss::lowering
