// Conv space: the schedule knobs of conv2d and depthwise_conv2d on the host CPU, their values,
// the one validity check, and the default schedule (docs/host-backend.md). host_space.hpp
// dispatches here for the conv ops; codegen_conv.hpp reads only schedules this check accepted.
//
// Layouts (fixed, not knobs): activations NHWC, conv2d weights HWIO ([R][S][C][K], so the
// weights are the row-major B of the implicit GEMM pixels x (R S C) x K), depthwise weights
// [R][S][C]; outputs NHWC. Bias/scale/shift hold one value per output channel.
//
// conv2d (direct convolution on the padded input; no im2col):
//   micro_m x micro_n  register block: micro_m output pixels x micro_n output channels
//                      (a multiple of the SIMD lanes); accumulators + one row of weight
//                      vectors + one broadcast must fit the vector registers
//   tile_h x tile_w    output-pixel block (rows x columns of one image) whose input halo is
//                      reused across the output-channel panels
//   tile_n             output-channel block (rounded to micro_n)
//   tile_k             input-channel block: one reduction block is R x S x tile_k; the
//                      R S tile_k x micro_n weight panel must fit L1d (the smallest tile_k
//                      always passes, so every workload has a valid schedule)
//   k_steps            unroll of the input-channel loop in the micro-kernel
//   async_copy_depth   how the weight panels are prepared: 1 read in place from the HWIO
//                      weights (no copy; rows K floats apart); 2 each R x S x tile_k x
//                      tile_n block packed into contiguous micro_n-wide panels right before
//                      its first use; 3 packed as 2, and the packed panel software-prefetched
//                      8 steps ahead and the output tile before its write-back
//   tile_order         0 channel block -> reduction block -> pixel blocks, panels outer in a
//                      block (weights reused, BLIS-like); 1 pixel block outermost (input
//                      halo reused across all channel blocks); 2 as 0 with the micro-tiles
//                      walked pixel-major (a pixel row's inputs reused across panels)
//   fusion_level       epilogue ops fused in the write-back (lowering/epilogue.hpp); the
//                      rest run as separate passes over the output
//   threads            OpenMP threads sharing the output-pixel blocks (and the packing of
//                      each weight block); default 1, values as for matmul (knob_values.hpp)
// depthwise_conv2d (vector lanes over channels, one R x S window per channel):
//   micro_m x micro_n  pixels of one output row x channels (multiple of the lanes) per
//                      register block
//   tile_h x tile_w    output-pixel block; tile_c channel block (rounded to micro_n)
//   k_steps            unroll of the R and S window loops
//   async_copy_depth   1 none; 2 prefetches the next window row's inputs and the output tile
//   tile_order         0 channel blocks outer; 1 pixel blocks outer; 2 as 0 with the
//                      micro-tiles walked channel-major
//   fusion_level       as for conv2d
//   threads            OpenMP threads, each an even contiguous share of the output-pixel
//                      blocks (and every channel block of them)
// Pure functions: thread-safe.
#pragma once

#include <string>

#include "core/schedule_space.hpp"
#include "core/workload.hpp"
#include "host/machine.hpp"

namespace atvoss::host {

// Whether w is a conv op the host generates (conv2d or depthwise_conv2d, fp32, epilogue of
// bias, batchnorm, relu, gelu, add). why (if given) says what is missing.
bool conv_supports(const Workload& w, std::string* why = nullptr);

// REQUIRES: conv_supports(w). bad_input naming the field otherwise.
ScheduleSpace conv_space_for(const Workload& w, const MachineInfo& m);
Schedule conv_default_schedule(const Workload& w, const MachineInfo& m);
// s (a point of w's space) on `threads` threads (a value of its threads knob). A conv2d whose
// pixel blocks would share out unevenly among them (codegen_conv.hpp, conv_slices) takes the
// tallest lower tile_h whose blocks share out evenly, where one does: 16-row blocks of a 56-row
// map gave one thread 32 rows and the other 24, and the channel slices that even it out make
// each thread read the whole input (ResNet-50's 56x56 1x1 convs ran no faster on two threads
// than on one). Where none does (a 7x7 map), the slices remain; so they do where the only
// even blocks would read over half their rows again as halo (3x3 windows on blocks of 1 row:
// a 14x14 map ran 30 % slower so), unless fewer micro_n panels than threads leave no slices.
Schedule conv_on_threads(const Workload& w, Schedule s, const MachineInfo& m, int threads);

}  // namespace atvoss::host
