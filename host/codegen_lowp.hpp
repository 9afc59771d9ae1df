// Codegen for int8 and bf16 matmuls: the C++ source of one low-precision host kernel
// (kernel_abi.hpp says what it reads). The same BLIS structure and knobs as the fp32 kernel
// (codegen.hpp), with k packed in groups that share one 32-bit lane: four u8 x s8 products per
// lane for AVX-512 VNNI (vpdpbusd, s32 accumulators), two bf16 products for AVX-512 BF16
// (vdpbf16ps, fp32 accumulators). int8 partial sums over k blocks stay s32 in C's memory until
// the last block, so the integer result is exact; the last block dequantises (C = qscale *
// (acc - qcomp)) and applies the fused epilogue in fp32. host_space.hpp refuses these dtypes
// on a machine without the instructions. Deterministic, like codegen.hpp.
#pragma once

#include <string>

#include "core/schedule.hpp"
#include "core/workload.hpp"
#include "host/machine.hpp"

namespace atvoss::host {

// REQUIRES: w is a matmul or batch_matmul of dtype int8 or bfloat16 and
// space_for(w, m).check(s).ok.
std::string generate_low_precision_source(const Workload& w, const Schedule& s, const MachineInfo& m);

// What the int8 and bf16 conv2d (codegen_conv.hpp) shares with the matmul, as source text: the
// dtype's types and dot product (TA, TB, ACC, INT8, KG, dot), and the helpers that follow the
// vector helpers (B rows LDB apart interleaved into k groups, one group's dot products into
// the register block, the write-back).
const char* low_precision_types(DType d);
const char* low_precision_helpers();

}  // namespace atvoss::host
