// Conv ops: the model engine's convolutions that no tuned conv kernel runs, around the tuned
// matmul where one does the arithmetic: im2col before it and the groups joined after it, a
// transposed conv's scatter-add after its matmul, ResNeXt-style grouped convs directly in NHWC,
// and the plain NCHW loops for what is left (weights that are graph inputs). Conventions as
// plain_ops.hpp's: fp32, Shapes in ONNX's order whatever the layout, each output written whole,
// no allocation, thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/plain_ops.hpp"
#include "frontend/phase_conv.hpp"

namespace atvoss::engine {

// A 2-D convolution of every kind ONNX allows (groups, dilations, per-side pads, strides) in
// NCHW order: x [N, C, H, W], weights [K, C / groups, R, S], bias [K] or null, y [N, K, OH, OW].
struct ConvAttrs {
  std::int64_t groups = 1, sh = 1, sw = 1, dh = 1, dw = 1, pad_top = 0, pad_left = 0;
};
void conv_nchw(const float* x, const Shape& xs, const float* w, const Shape& ws, const float* bias, float* y,
               const Shape& ys, const ConvAttrs& a);

// A dilated conv as d x d undilated ones (dilation d, stride 1, the window centred: pads of
// d x (kernel - 1) / 2): output pixel (i d + a, j d + b) reads only input pixels of the same
// phase (a, b), so phase image (a, b), pixels (i d + a, j d + b), convolved without dilation
// is that phase of the output. to_phases: one image x [H, W, C] (channels last) as the d x d
// phase images [d x d, ceil(H / d), ceil(W / d), C], zeros past the image (the padding the
// undilated conv reads there); from_phases: phase images [d x d, ..., K] back as y [H, W, K].
void to_phases(const float* x, std::int64_t h, std::int64_t w, std::int64_t c, std::int64_t d, float* phases,
               int threads = 1);
void from_phases(const float* phases, std::int64_t h, std::int64_t w, std::int64_t k, std::int64_t d, float* y,
                 int threads = 1);

// A conv's input windows as matrix rows, NHWC (im2col): for each group g, a [N x OH x OW,
// R x S x Cg] matrix at cols + g * N * OH * OW * R * S * Cg whose row (n, oh, ow) holds, tap by
// tap (u, v), the Cg channels of group g of input pixel (oh * sh - pad_top + u * dh,
// ow * sw - pad_left + v * dw), zeros outside the image. x: [N, C, H, W]; y: [N, K, OH, OW].
void im2col_nhwc(const float* x, const Shape& xs, std::int64_t r, std::int64_t s, const ConvAttrs& a, float* cols,
                 const Shape& ys, int threads = 1);
// One group's im2col rows region by region (frontend/phase_conv.hpp, sparse_conv_regions), one
// region's after another's: image by image, the region's pixels row-major, each row the taps
// (u, v) that read the input there, c channels each; x NHWC ([N, C, H, W] its ONNX shape).
void im2col_regions_nhwc(const float* x, const Shape& xs, const std::vector<frontend::ConvRegion>& regions,
                         const ConvAttrs& a, float* cols, int threads = 1);
// The regions' matmul outputs (k channels a row, in im2col_regions_nhwc's order) to their
// pixels of y (NHWC, [N, K, OH, OW] its ONNX shape).
void scatter_regions_nhwc(const float* parts, const std::vector<frontend::ConvRegion>& regions, float* y,
                          const Shape& ys, int threads = 1);
// A grouped conv's outputs [groups, pixels, kg] joined as NHWC rows [pixels, groups x kg],
// plus the bias (groups x kg values; null: none).
void join_groups(const float* parts, std::int64_t groups, std::int64_t pixels, std::int64_t kg, const float* bias,
                 float* out, int threads = 1);
// A grouped conv of few channels a group, run directly in NHWC: groups of cg input and cg output
// channels (cg 2, 4, 8 or 16; K at least 16), as ResNeXt's and RegNet's are. Each 16-lane
// vector of output channels spans 16 / cg groups whose inputs are the same 16 channels, so one
// load of them, permuted per input channel of a group (broadcast, for 16), feeds every lane: no
// lane computes a zero, where im2col and a matmul of cg columns left most of each register
// block empty and wrote nine input copies (ResNeXt's 3x3 convs). Where K is no multiple of 16
// (RegNetX-200MF's 24, 56 and 152), the last block ends at K and overlaps the one before.
bool grouped_conv_fits(std::int64_t k, std::int64_t cg, std::int64_t kg);
// ONNX's weights [K, cg, R, S] as grouped_conv_nhwc reads them: per 16-channel block (the last
// one ending at K), [R][S][cg][16].
std::vector<float> pack_grouped_weights(const float* w, std::int64_t k, std::int64_t cg, std::int64_t r,
                                        std::int64_t s);
// y (NHWC, ys its ONNX shape [N, K, OH, OW]) = the conv of x (NHWC, xs [N, C, H, W]) with the
// packed R x S weights, plus the bias (K values or null), then a ReLU where relu.
struct GroupedConv {
  std::int64_t r = 1, s = 1, cg = 1;
  ConvAttrs a;
  bool relu = false;
};
void grouped_conv_nhwc(const float* x, const Shape& xs, const float* packed, const float* bias, const GroupedConv& g,
                       float* y, const Shape& ys, int threads = 1);
// A transposed conv's scatter-add in NHWC (its matmul done): y[n, oh, ow, :] = bias (or 0)
// plus cols[(n, ih, iw), (u, v, :)] over every input pixel (ih, iw) and tap (u, v) whose window
// covers (oh, ow): oh = ih * sh - pad_top + u * dh, ow = iw * sw - pad_left + v * dw. x: the
// input's shape [N, C, H, W]; cols: N x H x W rows of kh x kw x K floats; y's shape [N, K, OH, OW].
void col2im_nhwc(const float* cols, const Shape& x, std::int64_t kh, std::int64_t kw, const ConvAttrs& a,
                 const float* bias, float* y, const Shape& ys, int threads = 1);
// ConvTranspose of x [N, C, H, W] with w [C, K / groups, R, S] (ONNX's layout) into y
// [N, K, OH, OW]: every input pixel scattered through the filter (pads trimmed from the top
// left; the output shape carries output_padding and output_shape).
void conv_transpose_nchw(const float* x, const Shape& xs, const float* w, const Shape& ws, const float* bias, float* y,
                         const Shape& ys, const ConvAttrs& a);

}  // namespace atvoss::engine
