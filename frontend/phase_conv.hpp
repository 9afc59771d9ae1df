// Convs the host's 2-D conv kernel runs after a rewrite. The importer gives the rewritten conv
// as the node's task and the engine runs it, so a plan's schedule is the one that runs.
// - A 3-D conv, depth by depth: the input depths its depth taps read, side by side as channels,
//   convolved in 2-D (engine/volume_ops.hpp, gather_depth_taps).
// - A dilated 2-D conv with stride 1 and its window centred (pads of d x (kernel - 1) / 2, as
//   torch writes DeepLab's and FCN's backbones): output pixel (i d + a, j d + b) reads only input
//   pixels of phase (a, b), so each of the d x d phase images, convolved without dilation (pad
//   (kernel - 1) / 2), is that phase of the output (engine/conv_ops.hpp, to_phases).
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/json.hpp"

namespace atvoss::frontend {

// The dims of the conv2d over the phase images (N: images x d x d, H and W: a phase image's,
// ceil(H / d) and ceil(W / d); the rest the conv's) of a conv of input x [N, C, H, W], weights
// w [K, C, R, R], output y, groups, strides, dilations and the pad of every side; nullopt
// where it does not apply: one group, stride 1, one dilation d >= 2 for both axes, a square
// window of odd size, centred, the output the input's size, and phase images of at least 8 x 8
// pixels (smaller ones, ASPP's dilations of 12 to 36, cost the kernel a call's setup per image
// for little work and mostly read their zero border).
std::optional<Json> phase_conv_dims(const std::vector<std::int64_t>& x, const std::vector<std::int64_t>& w,
                                    const std::vector<std::int64_t>& y, std::int64_t groups,
                                    const std::vector<std::int64_t>& strides,
                                    const std::vector<std::int64_t>& dilations, std::int64_t pad);

// The dims of the 2-D conv a 3-D conv of input x [N, C, D, H, W], weights w [K, C, kd, kh, kw]
// and output y runs as for each output depth of each image (N 1, C kd x C, H and W x's), given
// its groups, strides, dilations and pads (3 each; pads begin then end, 6); nullopt where the
// 2-D kernel's window does not fit H and W: one group, one stride for H and W, one pad on their
// four sides, no dilation along them (the depth axis takes any).
std::optional<Json> depth_conv_dims(const std::vector<std::int64_t>& x, const std::vector<std::int64_t>& w,
                                    const std::vector<std::int64_t>& y, std::int64_t groups,
                                    const std::vector<std::int64_t>& strides,
                                    const std::vector<std::int64_t>& dilations, const std::vector<std::int64_t>& pads);

}  // namespace atvoss::frontend
