// Codegen for the host conv ops: the C++ source of one conv2d or depthwise_conv2d kernel,
// generated from a workload and a schedule the conv space accepted (conv_space.hpp, which
// also lists what each knob changes). The kernel takes the ABI of kernel_abi.hpp: a = NHWC
// input, b = weights (HWIO, or [R][S][C] for depthwise), c = NHWC output.
//   conv2d: each image is copied into a zero-bordered buffer when pad > 0 (the border is
//   written once per calling thread); a register block of micro_m output pixels x micro_n output channels
//   accumulates over R x S x tile_k by broadcasting one input value per pixel against the
//   weight vectors (FMA in GCC vector-extension registers of the machine's SIMD width). The
//   weights are read in place (HWIO) or packed into contiguous micro_n-wide panels, block by
//   block as the loops first reach them (tile_order 1: all before the pixel blocks), the
//   packing part of every call (async_copy_depth). `threads` splits the output-pixel blocks
//   over OpenMP threads (and each weight block's packing). The fused epilogue runs at the
//   write-back of the last reduction block; the unfused ops as one pass each over the output.
//   depthwise_conv2d: vectors over channels, micro_m pixels x micro_n channels per register
//   block, the window loops unrolled by k_steps, the epilogue as for conv2d.
// Deterministic: the same inputs give the same text, so the compile cache can key on it.
#pragma once

#include <string>

#include "core/schedule.hpp"
#include "core/workload.hpp"
#include "host/machine.hpp"

namespace atvoss::host {

// REQUIRES: conv_space_for(w, m).check(s).ok.
std::string generate_conv_source(const Workload& w, const Schedule& s, const MachineInfo& m);

// How many slices a conv2d kernel of `threads` threads cuts each pixel block's output channels
// into: 1 where OpenMP's static share of the th x tw pixel blocks of the oh x ow output gives no
// thread over a tenth more pixels than an even share, else `threads` (each thread a slice of
// every block). 1 also where a weight block has fewer `panels` (micro_n wide) than threads.
long conv_slices(long oh, long ow, long th, long tw, long threads, long panels);
// The micro_n-wide panels of a conv2d schedule's weight block (its tile_n, at most K channels).
long conv_panels(const Workload& w, const Schedule& s);

}  // namespace atvoss::host
