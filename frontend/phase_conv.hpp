// Convs the host's 2-D conv kernel runs after a rewrite. The importer gives the rewritten conv
// as the node's task and the engine runs it, so a plan's schedule is the one that runs.
// - A 3-D conv, depth by depth: the input depths its depth taps read, side by side as channels,
//   convolved in 2-D (engine/volume_ops.hpp, gather_depth_taps).
// - A dilated 2-D conv with stride 1 and its window centred (pads of d x (kernel - 1) / 2, as
//   torch writes DeepLab's and FCN's backbones): output pixel (i d + a, j d + b) reads only input
//   pixels of phase (a, b), so each of the d x d phase images, convolved without dilation (pad
//   (kernel - 1) / 2), is that phase of the output (engine/conv_ops.hpp, to_phases).
// - A conv whose taps read mostly padding (ASPP's dilations of 12 to 36 on a feature map of 32
//   to 65 pixels, where each phase image above is a few pixels): its output split into regions
//   in which each tap reads the image at every pixel or at none, each region the im2col matmul
//   of its own taps (engine/conv_ops.hpp, im2col_regions_nhwc), so no row holds a padding zero.
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

// Along one axis of a conv: the outputs [out_begin, out_end) whose taps [tap_begin, tap_end)
// read the input and whose other taps read padding.
struct TapSpan {
  std::int64_t out_begin = 0, out_end = 0, tap_begin = 0, tap_end = 0;
};
// The spans covering outputs 0 to out of an axis of `in` inputs, `taps` taps, a stride, the pad
// before the first input and a dilation, in order; neighbours read different taps.
std::vector<TapSpan> tap_spans(std::int64_t in, std::int64_t out, std::int64_t taps, std::int64_t stride,
                               std::int64_t pad, std::int64_t dilation);

// One axis of a conv: its sizes, stride, pad before the first input and dilation.
struct ConvAxis {
  std::int64_t in = 1, out = 1, taps = 1, stride = 1, pad = 0, dilation = 1;
};
// A rectangle of output pixels and the taps that read the input there (the others read padding
// at each of its pixels).
struct ConvRegion {
  TapSpan h, w;
  std::int64_t pixels() const { return (h.out_end - h.out_begin) * (w.out_end - w.out_begin); }
  std::int64_t taps() const { return (h.tap_end - h.tap_begin) * (w.tap_end - w.tap_begin); }
};
// The regions of a 2-D conv (a 1-D one: h of one input, one output, one tap) when their im2col
// rows hold at most four fifths of the whole conv's (each region reads at least one tap); else
// empty, and the conv's one im2col matmul runs (docs/decisions/engine-ninth-cut.md: ASPP's
// rate 12 on a 65-pixel map, 0.77, splits; Inception v3's 1x7 on 17 pixels, 0.90, does not).
std::vector<ConvRegion> sparse_conv_regions(const ConvAxis& h, const ConvAxis& w);
// The region doing the most work (pixels x taps; the first of equals): the importer's task.
const ConvRegion& largest_region(const std::vector<ConvRegion>& regions);

}  // namespace atvoss::frontend
