// The window ops of three and more spatial dims (video and medical models' Conv, ConvTranspose,
// MaxPool and AveragePool of [N, C, D, H, W]), which the 1-D and 2-D paths (conv_ops.hpp,
// pool_ops.cpp) do not take. The conv gathers the im2col columns of 64 output pixels at a time
// from the input into a packed_product panel and multiplies every output channel's weights by
// it; the transposed conv is one product of every tap and a scatter-add; the pools are direct
// loops. Layout NC followed by the spatial dims. Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/plain_ops.hpp"

namespace atvoss::engine {

struct WindowNd {
  std::vector<std::int64_t> kernel, strides, dilations, pad_begin, pad_end;  // one per spatial dim
  std::int64_t groups = 1;                                                   // conv only
  bool count_include_pad = false;                                            // AveragePool only
  float p = 2;                                                               // LpPool only
};

// Where each kernel tap reads in a plane of xs for each pixel of ys (windows placed at
// pixel x stride - pad): taps x pixels offsets, -1 outside. Computed once per node (at load):
// conv_nd's (input, output) and conv_transpose_nd's (output, input).
std::vector<std::int32_t> tap_offsets(const Shape& xs, const Shape& ys, const WindowNd& a);

// y [N, K, out...] = x [N, C, in...] convolved with w [K, C / groups, kernel...], plus bias
// (K values, or null), then ReLU'd where relu; the output's spatial dims are ys's; offsets
// tap_offsets(xs, ys, a).
void conv_nd(const float* x, const Shape& xs, const float* w, const float* bias, float* y, const Shape& ys,
             const WindowNd& a, const std::vector<std::int32_t>& offsets, int threads, bool relu = false);
// y [N, K, out...] = x [N, C, in...] transposed-convolved with w [C, K / groups, kernel...], plus
// bias: the products of every tap as one matrix product, then added where they land; offsets
// tap_offsets(ys, xs, a) (where each tap of each input pixel lands in an output plane).
void conv_transpose_nd(const float* x, const Shape& xs, const float* w, const float* bias, float* y, const Shape& ys,
                       const WindowNd& a, const std::vector<std::int32_t>& offsets, int threads);
// The 2-D conv input of output depth `od` of a 3-D conv over x [D, H, W, C] (one image, channels
// last): out [H, W, taps x C] holds, for each pixel, the C channels of input depth
// od x stride - pad + t x dilation for each depth tap t in turn, zeros where that depth is
// outside x. So a 3-D conv is, depth by depth, the 2-D conv of taps x C channels that the host
// kernels compute (docs/decisions/engine-seventh-cut.md).
struct DepthTaps {
  std::int64_t depth = 1, height = 1, width = 1, channels = 1;  // x's
  std::int64_t taps = 1, stride = 1, pad = 0, dilation = 1;
};
void gather_depth_taps(const float* x, const DepthTaps& d, std::int64_t od, float* out, int threads);

// MaxPool, AveragePool or LpPool ((sum of |x|^p)^(1/p)) of x [N, C, in...] into y [N, C, out...]:
// padding never wins a max and adds nothing to a p-norm, and an average counts it only with
// count_include_pad. Of any spatial rank (LpPool's 1-D and 2-D ones run here too).
enum class PoolKind { max, average, lp };
void pool_nd(PoolKind kind, const float* x, const Shape& xs, float* y, const Shape& ys, const WindowNd& a, int threads);

}  // namespace atvoss::engine
