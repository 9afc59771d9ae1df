// Fusion: which epilogue ops of a workload run on the tile inside the main
// kernel at a given fusion_level, and which run afterwards as kernels of their
// own that round-trip the whole tensor through GM (CALIBRATION.md section 2):
//   0 none; 1 elementwise epilogues (bias, relu, gelu); 2 also normalisation and
//   residual (batchnorm, add, layernorm); 3 like 2, and the output tiles stay on
//   chip for the next op, which costs L1 space and a hand-over per tile.
// Ops fuse in chain order: the first op the level does not allow, and every op
// after it, run unfused. Pure functions: thread-safe.
#pragma once

#include <string>
#include <vector>

namespace atvoss::simulator {

struct FusionSplit {
  std::vector<std::string> fused;
  std::vector<std::string> unfused;
};

FusionSplit split_epilogue(const std::vector<std::string>& epilogue, int fusion_level);

// Vector instructions per output element for an epilogue op (gelu ~ tanh series).
double epilogue_ops_per_element(const std::string& op);
// Extra tensors of the output's size the op reads (the residual of add).
double epilogue_extra_inputs(const std::string& op);

}  // namespace atvoss::simulator
