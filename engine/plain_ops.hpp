// Plain ops: the model engine's kernels for the ONNX operators that have no tuned kernel (pools,
// elementwise ops with broadcasting, concat, transpose, softmax, layer norm, LRN, gather; the
// convolutions are conv_ops.hpp's), and the layout conversions between ONNX's NCHW and the tuned
// convs' NHWC.
// fp32, dense, row-major in the layout named. Shapes are ONNX's (NCHW order for 4-D) even
// where the data is NHWC. Each function writes every element of its output and allocates
// nothing. Pure functions of their arguments: thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

namespace atvoss::engine {

using Shape = std::vector<std::int64_t>;

std::int64_t elements(const Shape& s);

// [N, C, spatial...] data between channels-second (ONNX's NCHW, NCDHW) and channels-last order
// (NHWC, NDHWC).
// threads: the cores the larger plain ops run on (OpenMP): the elementwise ops, transpose,
// softmax and layer norm too, each thread given at least 16384 elements.
void nchw_to_nhwc(const float* in, float* out, const Shape& nchw, int threads = 1);
void nhwc_to_nchw(const float* in, float* out, const Shape& nchw, int threads = 1);
// Each of `pixels` rows of g groups of cg channels, as [cg][g] (ShuffleNet's channel shuffle,
// Reshape to [N, g, C / g, H, W] and Transpose by [0, 2, 1, 3, 4], on NHWC data).
void shuffle_channels(const float* in, std::int64_t pixels, std::int64_t g, std::int64_t cg, float* out,
                      int threads = 1);

// Unary elementwise ops by ONNX name (Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Neg, Abs, Erf,
// Reciprocal, Floor, Ceil, Identity, Softplus, Softsign, HardSwish, Not, Gelu (erf),
// GeluTanh, Square, Cube, LeakyRelu (alpha), Elu (alpha), HardSigmoid (alpha, beta), Clip (lo, hi)).
// alpha and beta carry the op's attributes. false when the op is not one of these.
bool unary(const std::string& op, const float* in, float* out, std::int64_t n, float alpha = 0, float beta = 0,
           int threads = 1);

// out = cond ? a : b elementwise, the three broadcast to so (numpy rules); cond null: a.
void where(const float* cond, const Shape& sc, const float* a, const Shape& sa, const float* b, const Shape& sb,
           float* out, const Shape& so, int threads = 1);

// Binary elementwise ops with numpy broadcasting (Add, Sub, Mul, Div, Pow, Max, Min, PRelu; the
// comparisons Equal, Less, LessOrEqual, Greater, GreaterOrEqual and the logic And, Or, Xor,
// giving 0 or 1; IntDiv, an integer tensor's Div; Mod and FMod, ONNX's Mod with fmod 0 and 1). false when the op is not
// one of these or the shapes do not broadcast. binary_op: whether binary() knows op.
bool binary_op(const std::string& op);
bool binary(const std::string& op, const float* a, const Shape& sa, const float* b, const Shape& sb, float* out,
            const Shape& so, int threads = 1);

struct Window {
  std::int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  // Average pool: divide by the taps inside the padded image (true) or inside the image.
  bool count_include_pad = false;
};
// Max or average pool over [N, C, H, W] -> [N, C, OH, OW], in NCHW or NHWC order (nhwc).
void pool(bool max, const float* in, const Shape& x, float* out, const Shape& y, const Window& w, bool nhwc,
          int threads = 1);
// Global average or max pool [N, C, H, W] -> [N, C, 1, 1]; in NHWC order when nhwc.
void global_pool(bool max, const float* in, const Shape& x, float* out, bool nhwc);

// Concat of inputs along axis; in NHWC order (axis 1 of a 4-D shape, the channels) when nhwc. A
// null input is in its place already (a kernel wrote it there): its part of out is left as it is.
void concat(const std::vector<const float*>& in, const std::vector<Shape>& shapes, std::int64_t axis, float* out,
            bool nhwc, int threads = 1);
// out = in transposed by perm (ONNX Transpose).
void transpose(const float* in, const Shape& x, const std::vector<std::int64_t>& perm, float* out, int threads = 1);

// Softmax (or LogSoftmax) along axis.
void softmax(const float* in, const Shape& x, std::int64_t axis, float* out, bool log, int threads = 1);
// LayerNormalization over the dims from axis on; gamma and beta (may be null) over those dims.
void layer_norm(const float* in, const Shape& x, std::int64_t axis, float epsilon, const float* gamma,
                const float* beta, float* out, int threads = 1);
// BatchNormalization (inference) of [N, C, ...] in NCHW order, or with the channels innermost
// (nhwc: a conv's output or a concat of them); relu: followed by max(0, x) in the same pass.
void batch_norm(const float* in, const Shape& x, const float* scale, const float* bias, const float* mean,
                const float* var, float epsilon, float* out, bool nhwc = false, int threads = 1, bool relu = false);
// LRN across channels of [N, C, H, W] in NCHW order, or NHWC (nhwc: a conv's output).
void lrn(const float* in, const Shape& x, std::int64_t size, float alpha, float beta, float bias, float* out,
         bool nhwc = false, int threads = 1);
// Gather of data along axis at int64 indices (negative ones count from the end).
// gather() with indices held as floats (computed by the model, engine/model.hpp); false, and
// nothing written, when one is no integer in [-x[axis], x[axis]).
bool gather_by(const float* data, const Shape& x, const float* indices, std::int64_t count, std::int64_t axis,
               float* out);
void gather(const float* data, const Shape& x, const std::int64_t* indices, std::int64_t count, std::int64_t axis,
            float* out);

// out = in[starts[d] + i * steps[d]] along each dim d, out's shape y (ONNX Slice, and each
// output of Split).
void strided_slice(const float* in, const Shape& x, const std::vector<std::int64_t>& starts,
                   const std::vector<std::int64_t>& steps, float* out, const Shape& y, int threads = 1);
// Reduction (ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceSumSquare, ReduceLogSum, ReduceLogSumExp) over the dims where reduced[d], into y (x's
// shape with those dims 1), accumulated in double. false for another op; reduce_op: whether
// reduce() knows op.
bool reduce_op(const std::string& op);
bool reduce(const std::string& op, const float* in, const Shape& x, const std::vector<bool>& reduced, float* out);
// ONNX Trilu: each matrix of x's last two dims with the elements below (upper) or above
// (lower) its k-th diagonal zeroed.
void trilu(const float* in, const Shape& x, std::int64_t k, bool upper, float* out);
// ONNX TopK along axis of x: the k largest (or smallest) values of each line and their indices
// (as floats), in order when sorted (else, too: ONNX leaves the order open); ties go to the
// lower index, as ONNX Runtime's do.
void top_k(const float* in, const Shape& x, std::size_t axis, std::int64_t k, bool largest, float* values,
           float* indices);
// ONNX OneHot: out (indices' shape with depth inserted at axis) holds on where the index (negative
// from depth's end) is the position along axis, off elsewhere; an index outside [-depth, depth)
// gives a line of off.
void one_hot(const float* indices, const Shape& is, std::int64_t depth, std::size_t axis, float off, float on,
             float* out);
// How a scatter combines an update with the value it lands on (ONNX's reduction attribute).
enum class ScatterReduce { none, add, mul, max, min };
// ONNX ScatterND into out (data's copy, shape x): each index tuple of indices ([..., k])
// addresses a slice of out that takes the matching slice of updates. ScatterElements: each
// element of updates (indices' shape) lands at its own index with its axis coordinate replaced
// by the index there. Negative indices count from the end. false if an index is outside its
// dim or not whole (out then partly written).
bool scatter_nd(float* out, const Shape& x, const float* indices, const Shape& is, const float* updates,
                ScatterReduce reduce);
bool scatter_elements(float* out, const Shape& x, const float* indices, const Shape& is, const float* updates,
                      std::size_t axis, ScatterReduce reduce);
// ONNX GatherND: for each index tuple of indices ([..., k], after batch_dims batch dims
// shared with x), the slice of x it addresses. false if an index is outside its dim or not whole.
bool gather_nd(const float* in, const Shape& x, const float* indices, const Shape& is, std::int64_t batch_dims,
               float* out);
// ONNX GatherElements: out (indices' shape) takes in at each index with its axis coordinate
// replaced by the index there (negative from the end). false if an index is outside the axis
// or not whole.
bool gather_elements(const float* in, const Shape& x, const float* indices, const Shape& is, std::size_t axis,
                     float* out);
// ONNX CumSum: out = the running sums of in along axis (summed in float, as ONNX Runtime sums);
// exclusive: each leaves out its own element; reverse: from the axis's end.
void cumulative_sum(const float* in, const Shape& x, std::size_t axis, bool exclusive, bool reverse, float* out);
// Pad: y = x with `before[d]` values before each dim's data (negative crops); outside x,
// `value` (constant), x mirrored about its edge without repeating it (reflect), x's edge
// repeated (edge) or x repeated from its other end (wrap, opset 19's: a circular padding), as
// ONNX's Pad modes.
enum class PadMode { constant, reflect, edge, wrap };
void pad(const float* in, const Shape& x, const std::vector<std::int64_t>& before, PadMode mode, float value,
         float* out, const Shape& y, int threads = 1);

// Tile: y's every index reads x at that index modulo x's dims.
void tile(const float* x, const Shape& xs, float* y, const Shape& ys);
// InstanceNormalization of [N, C, ...]: each (n, c) plane normalized, then scale[c], bias[c].
void instance_norm(const float* x, const Shape& xs, const float* scale, const float* bias, float epsilon, float* y,
                   int threads = 1);
// ONNX GroupNormalization of [N, C, ...]: each of `groups` blocks of C / groups channels
// normalized over its channels and pixels, then scale and bias per channel (opset 21) or, with
// per_group, per group (opset 18). Instance norm is the case of C groups.
void group_norm(const float* x, const Shape& xs, std::int64_t groups, const float* scale, const float* bias,
                bool per_group, float epsilon, float* y, int threads = 1);
// ONNX RMSNormalization: each row of x's dims from axis on divided by its root mean square
// (epsilon added to the mean square), times scale (one value per element of a row; null: 1).
void rms_norm(const float* x, const Shape& xs, std::int64_t axis, float epsilon, const float* scale, float* y);

// QuantizeLinear and DequantizeLinear as ONNX Runtime computes them, values held as floats
// (the engine's integers are exact floats): quantize y = clamp(nearbyint(x / scale) + zero,
// low, high) (round half to even, the division as written), dequantize y = (x - zero) * scale.
// One scale and zero point for the tensor (count 1), or one per index along an axis: element i
// takes those of (i / inner) % count. A round trip (a QDQ model's activation: QuantizeLinear read
// only by DequantizeLinear of the same scale and zero point) gives the dequantized value in one
// pass.
struct Quantization {
  const float* scale = nullptr;  // count values each
  const float* zero = nullptr;
  std::int64_t count = 1, inner = 1;
  float low = 0, high = 255;  // the integer type's range (quantize)
  bool round_trip = false;    // quantize then dequantize by the same scale and zero point
};
void quantize_linear(const float* x, std::int64_t n, const Quantization& q, float* y, int threads = 1);
void dequantize_linear(const float* x, std::int64_t n, const Quantization& q, float* y, int threads = 1);
// DynamicQuantizeLinear: x's range widened to hold 0, its uint8 scale (max - min) / 255 (1 for
// an all-zero x) and zero point (0 - min) / scale rounded half to even into [0, 255], and x
// quantized by them (quantize_linear), as ONNX Runtime computes them.
void dynamic_quantize_linear(const float* x, std::int64_t n, float* y, float* scale, float* zero, int threads = 1);
// The u8 codes of values that lie on a quantization grid (a DequantizeLinear's output, (q -
// zero) * scale for q in [0, 255]): x / scale + zero, rounded and clamped, one byte each, for an
// int8 kernel to read.
void grid_codes(const float* x, std::int64_t n, float scale, int zero, std::uint8_t* q, int threads = 1);
// The same for every stride-th pixel of an NHWC image ([N, H, W, C]) from the first, in rows and
// columns: the input a 1x1 conv of that stride and no padding reads, as a [N, OH, OW, C] image.
void grid_codes_strided(const float* x, const Shape& nhwc, std::int64_t stride, float scale, int zero, std::uint8_t* q,
                        int threads = 1);

// LpNormalization: x over its p-norm (p 1 or 2) along axis; a norm of 0 gives 0, as ONNX
// Runtime gives.
void lp_normalize(const float* x, const Shape& xs, std::size_t axis, int p, float* y);
// Hardmax: 1 at the first largest value along axis, 0 elsewhere.
void hardmax(const float* x, const Shape& xs, std::size_t axis, float* y);
// MeanVarianceNormalization over the dims where reduced[d]: (x - mean) / sqrt(variance).
void mean_variance_normalize(const float* x, const Shape& xs, const std::vector<bool>& reduced, float* y);
// EyeLike: y of shape [rows, cols] with ones on the diagonal k above the main one (below: k < 0).
void eye_like(std::int64_t rows, std::int64_t cols, std::int64_t k, float* y);

// GridSample of x [N, C, H, W] at grid [N, H_out, W_out, 2] (x, y in [-1, 1]) into y [N, C, H_out,
// W_out]: mode "nearest" (halves to even), "linear" or "cubic" (Keys, a = -0.75); padding
// "zeros", "border" or "reflection", applied to the coordinate (but a cubic one's, as ONNX
// Runtime and torch do) and to each tap; align_corners
// maps -1 and 1 to the corner pixels' centres, else to the image's edges.
struct GridSampleAttrs {
  std::string mode = "linear", padding = "zeros";
  bool align_corners = false;
};
void grid_sample(const float* x, const Shape& xs, const float* grid, const Shape& gs, float* y,
                 const GridSampleAttrs& a, int threads = 1);

// Resize and Upsample of the last two dims of [N, C, H, W] (NCHW) to ys: nearest or linear
// (bilinear), the output coordinate mapped back by ONNX's coordinate_transformation_mode.
struct ResizeAttrs {
  bool linear = false;
  bool cubic = false;  // 4 taps per axis (ONNX's cubic mode), cubic_a their coefficient
  float cubic_a = -0.75f;
  bool exclude_outside = false;                // cubic: taps outside the image weigh 0 and the rest are renormalized
  std::string coordinates = "half_pixel";      // half_pixel, pytorch_half_pixel, align_corners, asymmetric
  std::string nearest = "round_prefer_floor";  // round_prefer_floor, round_prefer_ceil, floor, ceil
  float scale_h = 1, scale_w = 1;              // the scales given, or out / in where sizes were
};
// Resize of [N, C, H, W] along H and W, in NCHW or NHWC order (nhwc).
void resize(const float* x, const Shape& xs, float* y, const Shape& ys, const ResizeAttrs& a, bool nhwc = false,
            int threads = 1);
// Resize (nearest or linear: a.cubic unread) of [N, C, spatial...] along every spatial dim, by
// scales (one per dim of x; a's scale_h and scale_w unread): a 3-D UNet's trilinear upsampling.
void resize_nd(const float* x, const Shape& xs, float* y, const Shape& ys, const ResizeAttrs& a,
               const std::vector<float>& scales, int threads = 1);

// y [M, N] = a [M, K] (row-major, or [K, M] when trans_a) x b [K, N] (or [N, K] when trans_b),
// alpha times, plus beta times c broadcast to [M, N] (c null: none); b packed on each call
// (packed_product.hpp), the rows shared among the threads.
void gemm(const float* a, const float* b, const float* c, const Shape& cs, float* y, std::int64_t m, std::int64_t n,
          std::int64_t k, bool trans_a, bool trans_b, float alpha, float beta, int threads = 1);

// count products of [m, k] x [k, n], the i-th's a, b and y given by operands(i): with at least
// as many as threads, each product on one thread, the products shared out; with fewer, one
// after another, each on every thread.
using GemmOperands = std::function<std::tuple<const float*, const float*, float*>(std::int64_t)>;
void batched_gemm(std::int64_t count, std::int64_t m, std::int64_t n, std::int64_t k, int threads,
                  const GemmOperands& operands);

// ONNX MatMul (numpy's matmul) of any ranks: a 1-D operand a row (a) or a column (b) dropped
// from the result, and the batch dims broadcast.
void matmul(const float* a, const Shape& as, const float* b, const Shape& bs, float* y, int threads = 1);

}  // namespace atvoss::engine
