// What the conv2d generator (codegen_conv.cpp, its int8 and bf16 text in codegen_conv_lowp.cpp)
// and the depthwise one (codegen_depthwise.cpp) share, as source text: the kernel's shape constants, the pixel blocks
// and micro-tiles over the image (kCommon), the float input's constants and the per-image pointers. Private to host/.
#pragma once

#include <string>

#include "core/schedule.hpp"
#include "core/workload.hpp"
#include "host/machine.hpp"

namespace atvoss::host {

// The preamble and the constants of w's shape and of s's register block and pixel tile; cols:
// the output's channels (K, or C for depthwise).
std::string conv_shape_text(const Workload& w, const Schedule& s, const MachineInfo& m, long cols);
// The padded input copy, the pixel blocks and the micro-tiles of a block.
const char* conv_common_text();
// TIN, CP, REFILL and ZERO_BORDER of an fp32 kernel.
const char* float_input_text();
// Image n's output and residual pointers, inside atvoss_kernel's loop over the images.
const char* image_pointers_text();
void replace_all(std::string& text, const std::string& from, const std::string& to);

// The int8 and bf16 conv2d's micro-kernel, packing and block walk (codegen_conv_lowp.cpp), and
// its conv_image over the weight blocks; they follow the low-precision helpers and precede
// and follow the weight blocks' text in that order.
const char* conv_lowp_text();
const char* conv_lowp_image_text();

// REQUIRES: w is a depthwise_conv2d and space_for(w, m).check(s).ok.
std::string generate_depthwise_source(const Workload& w, const Schedule& s, const MachineInfo& m);

}  // namespace atvoss::host
