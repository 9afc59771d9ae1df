// Epilogue: what the compiler knows about the epilogue ops of a workload — which of
// them fuse into the main kernel at a fusion_level, how much vector work each costs
// per element, and which extra tensors it reads. No hardware behaviour lives here.
//   fusion_level 0 none; 1 elementwise epilogues (bias, relu,
//   leaky_relu, gelu, gelu_erf, sigmoid, silu, tanh, hardswish, hardsigmoid, mish, requantize, quantize,
//   dequantize); 2 also
//   normalisation and residual (batchnorm, add, layernorm); 3 like 2, and the output
//   tiles stay on chip for the next op (L1 space and a hand-over per tile).
// Ops fuse in chain order: the first op the level does not allow, and every op after
// it, run as kernels of their own. Pure functions: thread-safe.
#pragma once

#include <string>
#include <vector>

namespace atvoss::lowering {

struct FusionSplit {
  std::vector<std::string> fused;
  std::vector<std::string> unfused;
  std::string rule;                // the fusion rule that fused `fused`; empty if none did
  double memory_budget_bytes = 0;  // that rule's budget for the fused epilogue; 0: none
};

// The longest prefix of op's epilogue that a rule enabled at fusion_level fuses; a tie
// goes to the earlier rule (built-ins first).
FusionSplit split_epilogue(const std::string& op, const std::vector<std::string>& epilogue, int fusion_level);
// The lowest fusion_level (0..3) at which op's whole epilogue fuses; 3 if none does.
int full_fusion_level(const std::string& op, const std::vector<std::string>& epilogue);

// Vector instructions per output element of an epilogue op (gelu: a tanh series).
double epilogue_ops_per_element(const std::string& op);
// Extra tensors of the output's size the op reads (the residual of add).
double epilogue_extra_inputs(const std::string& op);
// Passes over its input an unfused epilogue kernel makes (layernorm: statistics, then normalise).
double epilogue_passes(const std::string& op);

}  // namespace atvoss::lowering
