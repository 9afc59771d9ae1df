// The plain ops that move data (plain_ops.hpp): NCHW <-> NHWC, the channel shuffle, concat,
// transpose, gather, slices, pad, tile and resize.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>

#include "engine/internal/plain_helpers.hpp"
#include "engine/plain_ops.hpp"
#include "engine/vector_build.hpp"

namespace atvoss::engine {
namespace {

using namespace loops;

using plain::broadcast_strides;
using plain::Odometer;

}  // namespace

namespace {

// A p x q block of out (rows `ld_out` apart) from in read at strides (1, q_step): the input's
// contiguous dim becomes the output's rows, walked in 16 x 16 tiles that stay in L1.
ATVOSS_INLINE void transpose_block_body(const float* in, std::int64_t q_step, float* out, std::int64_t ld_out,
                                        std::int64_t p, std::int64_t q) {
  constexpr std::int64_t kTile = 16;
  for (std::int64_t i0 = 0; i0 < p; i0 += kTile) {
    const std::int64_t i1 = std::min(p, i0 + kTile);
    for (std::int64_t j0 = 0; j0 < q; j0 += kTile) {
      const std::int64_t j1 = std::min(q, j0 + kTile);
      for (std::int64_t i = i0; i < i1; ++i) {
        for (std::int64_t j = j0; j < j1; ++j) out[i * ld_out + j] = in[i + j * q_step];
      }
    }
  }
}
ATVOSS_BUILT_TWICE(transpose_block,
                   (const float* in, std::int64_t q_step, float* out, std::int64_t ld_out, std::int64_t p,
                    std::int64_t q),
                   (in, q_step, out, ld_out, p, q))

// Pixels [p0, p1) of one image from c planes of hw floats to c-float pixels. Three channels
// (every RGB input of a vision model) a loop of its own, which the compiler vectorizes.
ATVOSS_INLINE void planes_to_pixels_body(const float* src, std::int64_t hw, std::int64_t c, float* dst, std::int64_t p0,
                                         std::int64_t p1) {
  if (c == 3) {
    for (std::int64_t p = p0; p < p1; ++p) {
      dst[3 * p] = src[p];
      dst[3 * p + 1] = src[hw + p];
      dst[3 * p + 2] = src[2 * hw + p];
    }
    return;
  }
  for (std::int64_t p = p0; p < p1; ++p) {
    for (std::int64_t ch = 0; ch < c; ++ch) dst[p * c + ch] = src[ch * hw + p];
  }
}
ATVOSS_BUILT_TWICE(planes_to_pixels,
                   (const float* src, std::int64_t hw, std::int64_t c, float* dst, std::int64_t p0, std::int64_t p1),
                   (src, hw, c, dst, p0, p1))

}  // namespace

// Split over the pixels of every image (a model's input is one image at batch 1); more than
// three channels go through transpose's 16 x 16 tiles (a pixel's channels one plane apart each:
// read or written a float a plane, they took 4.8 ms for a 56 x 56 x 256 output).
void nchw_to_nhwc(const float* in, float* out, const Shape& s, int threads) {
  const std::int64_t n = s[0], c = s[1], hw = elements(Shape(s.begin() + 2, s.end()));
  const auto run = planes_to_pixels_here();
  const auto block = transpose_block_here();
  split(n * hw, rows_grain(c), threads, [&](std::int64_t q0, std::int64_t q1) {
    for (std::int64_t b = q0 / hw; b < n && b * hw < q1; ++b) {
      const std::int64_t p0 = std::max(q0 - b * hw, std::int64_t(0)), p1 = std::min(q1 - b * hw, hw);
      if (c == 3) {
        run(in + b * c * hw, hw, c, out + b * c * hw, p0, p1);
      } else {  // out[p][ch] = in[ch][p]: the block's rows are pixels
        block(in + b * c * hw + p0, hw, out + (b * hw + p0) * c, c, p1 - p0, c);
      }
    }
  });
}

namespace {

// rows of g x cg floats each, transposed to cg x g; two groups (ShuffleNet's) a loop of their
// own, which the compiler vectorizes with permutes.
ATVOSS_INLINE void shuffle_rows_body(const float* in, std::int64_t rows, std::int64_t g, std::int64_t cg, float* out) {
  const std::int64_t c = g * cg;
  for (std::int64_t p = 0; p < rows; ++p) {
    const float* src = in + p * c;
    float* dst = out + p * c;
    if (g == 2) {
      for (std::int64_t i = 0; i < cg; ++i) {
        dst[2 * i] = src[i];
        dst[2 * i + 1] = src[cg + i];
      }
      continue;
    }
    for (std::int64_t i = 0; i < cg; ++i) {
      for (std::int64_t j = 0; j < g; ++j) dst[i * g + j] = src[j * cg + i];
    }
  }
}
ATVOSS_BUILT_TWICE(shuffle_rows, (const float* in, std::int64_t rows, std::int64_t g, std::int64_t cg, float* out),
                   (in, rows, g, cg, out))

}  // namespace

void shuffle_channels(const float* in, std::int64_t pixels, std::int64_t g, std::int64_t cg, float* out, int threads) {
  const auto run = shuffle_rows_here();
  split(pixels, rows_grain(g * cg), threads,
        [&](std::int64_t p0, std::int64_t p1) { run(in + p0 * g * cg, p1 - p0, g, cg, out + p0 * g * cg); });
}

void nhwc_to_nchw(const float* in, float* out, const Shape& s, int threads) {
  const std::int64_t n = s[0], c = s[1], hw = elements(Shape(s.begin() + 2, s.end()));
  const auto block = transpose_block_here();
  split(n * hw, rows_grain(c), threads, [&](std::int64_t q0, std::int64_t q1) {
    for (std::int64_t b = q0 / hw; b < n && b * hw < q1; ++b) {
      const std::int64_t p0 = std::max(q0 - b * hw, std::int64_t(0)), p1 = std::min(q1 - b * hw, hw);
      // out[ch][p] = in[p][ch]: the block's rows are channels
      block(in + (b * hw + p0) * c, c, out + b * c * hw + p0, hw, c, p1 - p0);
    }
  });
}

void concat(const std::vector<const float*>& in, const std::vector<Shape>& shapes, std::int64_t axis, float* out,
            bool nhwc, int threads) {
  // As [outer, dim_axis x inner] blocks: NHWC with axis 1 is [N x H x W, C] along the last.
  const Shape& s0 = shapes.front();
  std::int64_t outer = 1, inner = 1;
  if (nhwc) {
    outer = s0[0] * s0[2] * s0[3];
  } else {
    for (std::int64_t d = 0; d < axis; ++d) outer *= s0[d];
    for (std::size_t d = axis + 1; d < s0.size(); ++d) inner *= s0[d];
  }
  std::int64_t total = 0;
  for (const auto& s : shapes) total += s[axis] * inner;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::int64_t block = shapes[i][axis] * inner;
    if (!in[i]) {  // already in its place
      offset += block;
      continue;
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t o = 0; o < outer; ++o) std::copy_n(in[i] + o * block, block, out + o * total + offset);
    offset += block;
  }
}

void transpose(const float* in, const Shape& x, const std::vector<std::int64_t>& perm, float* out, int threads) {
  const std::size_t r = x.size();
  const std::int64_t n = elements(x);
  if (n == 0) return;
  if (r == 0) {
    out[0] = in[0];
    return;
  }
  std::vector<std::int64_t> in_strides(r, 1), out_shape(r), step(r), out_strides(r, 1);
  for (int d = int(r) - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * x[d + 1];
  for (std::size_t d = 0; d < r; ++d) {
    out_shape[d] = x[perm[d]];
    step[d] = in_strides[perm[d]];
  }
  for (int d = int(r) - 2; d >= 0; --d) out_strides[d] = out_strides[d + 1] * out_shape[d + 1];
  const std::int64_t inner = out_shape[r - 1], inner_step = step[r - 1];
  // The output dim that reads the input's contiguous last dim (none when that dim is the output's last too).
  std::size_t rows_dim = r;
  for (std::size_t d = 0; d + 1 < r; ++d) {
    if (perm[d] == std::int64_t(r) - 1 && x[r - 1] > 1) rows_dim = d;
  }
  Odometer outer;
  for (std::size_t d = 0; d + 1 < r; ++d) {
    if (d == rows_dim) continue;
    outer.size.push_back(out_shape[d]);
    outer.sa.push_back(step[d]);
    outer.sb.push_back(out_strides[d]);
  }
  std::int64_t count = 1;
  for (auto e : outer.size) count *= e;
  const std::int64_t per = n / count;  // elements per outer index
  const bool blocked = inner_step != 1 && rows_dim < r;
  const auto block = transpose_block_here();
  split(count, rows_grain(per), threads, [&](std::int64_t c0, std::int64_t c1) {
    Odometer o = outer;
    o.seek(c0);
    for (std::int64_t c = c0; c < c1; ++c, o.next()) {
      if (blocked) {
        block(in + o.a, inner_step, out + o.b, out_strides[rows_dim], out_shape[rows_dim], inner);
      } else {
        const float* src = in + o.a;
        float* dst = out + o.b;
        for (std::int64_t j = 0; j < inner; ++j) dst[j] = src[j * inner_step];
      }
    }
  });
}

void gather(const float* data, const Shape& x, const std::int64_t* indices, std::int64_t count, std::int64_t axis,
            float* out) {
  const auto [outer, len, inner] = plain::around_axis(x, std::size_t(axis));
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t at = indices[i] < 0 ? indices[i] + len : indices[i];
      std::copy_n(data + (o * len + at) * inner, inner, out + (o * count + i) * inner);
    }
  }
}

void trilu(const float* in, const Shape& x, std::int64_t k, bool upper, float* out) {
  const std::size_t r = x.size();
  const std::int64_t rows = x[r - 2], cols = x[r - 1], matrices = elements(x) / std::max<std::int64_t>(rows * cols, 1);
  for (std::int64_t m = 0; m < matrices; ++m) {
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::int64_t at = (m * rows + i) * cols + j;
        out[at] = (upper ? j - i >= k : j - i <= k) ? in[at] : 0.0f;
      }
    }
  }
}

namespace {

float scattered(ScatterReduce r, float old, float update) {
  switch (r) {
    case ScatterReduce::add:
      return old + update;
    case ScatterReduce::mul:
      return old * update;
    case ScatterReduce::max:
      return std::max(old, update);
    case ScatterReduce::min:
      return std::min(old, update);
    default:
      return update;
  }
}

// An index into a dim of len, negative from the end; -1 if outside it or not whole.
std::int64_t index_in(float v, std::int64_t len) {
  if (!(v >= -float(len) && v < float(len)) || std::trunc(v) != v) return -1;
  return std::int64_t(v < 0 ? v + float(len) : v);
}

}  // namespace

bool scatter_nd(float* out, const Shape& x, const float* indices, const Shape& is, const float* updates,
                ScatterReduce reduce) {
  const std::size_t k = std::size_t(is.back());
  std::int64_t tuples = 1, slice = 1;
  for (std::size_t d = 0; d + 1 < is.size(); ++d) tuples *= is[d];
  for (std::size_t d = k; d < x.size(); ++d) slice *= x[d];
  for (std::int64_t t = 0; t < tuples; ++t) {
    std::int64_t at = 0;
    for (std::size_t j = 0; j < k; ++j) {
      const std::int64_t i = index_in(indices[t * std::int64_t(k) + std::int64_t(j)], x[j]);
      if (i < 0) return false;
      at = at * x[j] + i;
    }
    for (std::int64_t e = 0; e < slice; ++e)
      out[at * slice + e] = scattered(reduce, out[at * slice + e], updates[t * slice + e]);
  }
  return true;
}

bool scatter_elements(float* out, const Shape& x, const float* indices, const Shape& is, const float* updates,
                      std::size_t axis, ScatterReduce reduce) {
  const std::size_t r = x.size();
  std::vector<std::int64_t> stride(r, 1), index(r, 0);
  for (std::size_t d = r; d-- > 1;) stride[d - 1] = stride[d] * x[d];
  for (std::int64_t e = 0; e < elements(is); ++e) {
    const std::int64_t i = index_in(indices[e], x[axis]);
    if (i < 0) return false;
    std::int64_t at = 0;
    for (std::size_t d = 0; d < r; ++d) at += (d == axis ? i : index[d]) * stride[d];
    out[at] = scattered(reduce, out[at], updates[e]);
    for (std::size_t d = r; d-- > 0;) {  // the next index of indices' shape
      if (++index[d] < is[d]) break;
      index[d] = 0;
    }
  }
  return true;
}

void top_k(const float* in, const Shape& x, std::size_t axis, std::int64_t k, bool largest, float* values,
           float* indices) {
  const auto [outer, len, inner] = plain::around_axis(x, axis);
  std::vector<std::int64_t> order(static_cast<std::size_t>(len));
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const auto value = [&](std::int64_t j) { return in[(o * len + j) * inner + i]; };
      for (std::int64_t j = 0; j < len; ++j) order[std::size_t(j)] = j;
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](std::int64_t a, std::int64_t b) {
        const float va = value(a), vb = value(b);
        return va != vb ? (largest ? va > vb : va < vb) : a < b;
      });
      for (std::int64_t j = 0; j < k; ++j) {
        values[(o * k + j) * inner + i] = value(order[std::size_t(j)]);
        indices[(o * k + j) * inner + i] = float(order[std::size_t(j)]);
      }
    }
  }
}

void one_hot(const float* indices, const Shape& is, std::int64_t depth, std::size_t axis, float off, float on,
             float* out) {
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= is[d];
  for (std::size_t d = axis; d < is.size(); ++d) inner *= is[d];
  std::fill_n(out, outer * depth * inner, off);
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const float v = indices[o * inner + i];
      const std::int64_t at = v < 0 ? std::int64_t(v) + depth : std::int64_t(v);
      if (at >= 0 && at < depth) out[(o * depth + at) * inner + i] = on;
    }
  }
}

bool gather_nd(const float* in, const Shape& x, const float* indices, const Shape& is, std::int64_t batch_dims,
               float* out) {
  const std::size_t b = std::size_t(batch_dims), k = std::size_t(is.back());
  std::int64_t batches = 1, tuples = 1, slice = 1, batch_stride = 1;
  for (std::size_t d = 0; d < b; ++d) batches *= x[d];
  for (std::size_t d = b; d + 1 < is.size(); ++d) tuples *= is[d];
  for (std::size_t d = b + k; d < x.size(); ++d) slice *= x[d];
  for (std::size_t d = b; d < x.size(); ++d) batch_stride *= x[d];
  for (std::int64_t bi = 0; bi < batches; ++bi) {
    for (std::int64_t t = 0; t < tuples; ++t) {
      const float* tuple = indices + (bi * tuples + t) * std::int64_t(k);
      std::int64_t at = 0;
      for (std::size_t j = 0; j < k; ++j) {
        const float len = float(x[b + j]), v = tuple[j];
        if (!(v >= -len && v < len) || std::trunc(v) != v) return false;
        at = at * x[b + j] + std::int64_t(v < 0 ? v + len : v);
      }
      std::copy_n(in + bi * batch_stride + at * slice, slice, out + (bi * tuples + t) * slice);
    }
  }
  return true;
}

bool gather_elements(const float* in, const Shape& x, const float* indices, const Shape& is, std::size_t axis,
                     float* out) {
  const std::size_t r = x.size();
  std::vector<std::int64_t> stride(r, 1), index(r, 0);
  for (std::size_t d = r; d-- > 1;) stride[d - 1] = stride[d] * x[d];
  const float len = float(x[axis]);
  for (std::int64_t i = 0; i < elements(is); ++i) {
    const float v = indices[i];
    if (!(v >= -len && v < len) || std::trunc(v) != v) return false;
    std::int64_t at = 0;
    for (std::size_t d = 0; d < r; ++d) at += (d == axis ? std::int64_t(v < 0 ? v + len : v) : index[d]) * stride[d];
    out[i] = in[at];
    for (std::size_t d = r; d-- > 0;) {  // the next index of indices' shape
      if (++index[d] < is[d]) break;
      index[d] = 0;
    }
  }
  return true;
}

bool gather_by(const float* data, const Shape& x, const float* indices, std::int64_t count, std::int64_t axis,
               float* out) {
  thread_local std::vector<std::int64_t> ids;
  ids.resize(std::size_t(count));
  const float len = float(x[axis]);
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = indices[i];
    if (!(v >= -len && v < len) || std::trunc(v) != v) return false;
    ids[std::size_t(i)] = std::int64_t(v);
  }
  gather(data, x, ids.data(), count, axis, out);
  return true;
}

// The trailing dims taken whole at step 1, and the one before them at step 1, are one
// contiguous run of input a copy each; with none, the last dim is walked at its step. The runs
// count like an odometer, split over the threads (a Split of ShuffleNet's channels took 95 us
// an output read element by element).
void strided_slice(const float* in, const Shape& x, const std::vector<std::int64_t>& starts,
                   const std::vector<std::int64_t>& steps, float* out, const Shape& y, int threads) {
  const std::size_t r = x.size();
  if (elements(y) == 0) return;
  if (r == 0) {
    out[0] = in[0];
    return;
  }
  std::vector<std::int64_t> stride(r, 1), out_stride(r, 1);
  for (int d = int(r) - 2; d >= 0; --d) {
    stride[d] = stride[d + 1] * x[d + 1];
    out_stride[d] = out_stride[d + 1] * y[d + 1];
  }
  std::int64_t src = 0;
  for (std::size_t d = 0; d < r; ++d) src += starts[d] * stride[d];
  std::size_t d = r;
  std::int64_t run = 1;
  while (d > 0 && steps[d - 1] == 1 && y[d - 1] == x[d - 1]) run *= y[--d];
  if (d > 0 && steps[d - 1] == 1) run *= y[--d];
  const bool contiguous = d < r;
  const std::int64_t len = contiguous ? run : y[r - 1], step = contiguous ? 1 : steps[r - 1];
  if (!contiguous) d = r - 1;
  Odometer outer;
  for (std::size_t k = 0; k < d; ++k) {
    outer.size.push_back(y[k]);
    outer.sa.push_back(steps[k] * stride[k]);
    outer.sb.push_back(out_stride[k]);
  }
  const std::int64_t count = elements(y) / len;
  split(count, rows_grain(len), threads, [&](std::int64_t c0, std::int64_t c1) {
    Odometer o = outer;
    o.seek(c0);
    for (std::int64_t c = c0; c < c1; ++c, o.next()) {
      const float* from = in + src + o.a;
      float* to = out + o.b;
      if (contiguous) {
        std::copy_n(from, len, to);
      } else {
        for (std::int64_t j = 0; j < len; ++j) to[j] = from[j * step];
      }
    }
  });
}

namespace {

// Where each output index of one dim of a Pad reads: an index of x's dim (x has `in` of them,
// `before` the pad in front, negative where it crops), or -1 for the constant. Negative pads
// crop first, and the modes then read the cropped extent, as ONNX Runtime does (a wrap or a
// reflection of what remains).
std::vector<std::int64_t> pad_axis(std::int64_t in, std::int64_t out, std::int64_t before, PadMode mode) {
  const std::int64_t after = out - in - before;
  const std::int64_t from = std::max<std::int64_t>(0, -before);
  const std::int64_t e = in - from - std::max<std::int64_t>(0, -after);  // the extent left to read
  const std::int64_t pad_before = std::max<std::int64_t>(0, before);
  std::vector<std::int64_t> map(std::size_t(out), -1);
  for (std::int64_t i = 0; i < out && e > 0; ++i) {
    std::int64_t at = i - pad_before;
    if (mode == PadMode::edge) at = std::clamp<std::int64_t>(at, 0, e - 1);
    if (mode == PadMode::wrap) at = ((at % e) + e) % e;
    if (mode == PadMode::reflect && e > 1) {  // mirrored about the edge, the edge once
      const std::int64_t period = 2 * (e - 1);
      at = ((at % period) + period) % period;
      if (at >= e) at = period - at;
    }
    if (at >= 0 && at < e) map[std::size_t(i)] = from + at;
  }
  return map;
}

}  // namespace

void pad(const float* in, const Shape& x, const std::vector<std::int64_t>& before, PadMode mode, float value,
         float* out, const Shape& y, int threads) {
  const std::size_t r = y.size();
  if (r == 0) {
    out[0] = in[0];
    return;
  }
  std::vector<std::int64_t> in_stride(r, 1);
  for (int d = int(r) - 2; d >= 0; --d) in_stride[d] = in_stride[d + 1] * x[d + 1];
  std::vector<std::vector<std::int64_t>> maps;
  for (std::size_t d = 0; d < r; ++d) maps.push_back(pad_axis(x[d], y[d], before[d], mode));
  // The last dim's run read in order (its interior): one copy per row.
  const std::vector<std::int64_t>& cols = maps.back();
  const std::int64_t width = y[r - 1];
  std::int64_t run0 = 0;
  while (run0 < width && cols[std::size_t(run0)] < 0) ++run0;
  std::int64_t run1 = run0;
  while (run1 < width && cols[std::size_t(run1)] == cols[std::size_t(run0)] + (run1 - run0)) ++run1;
  split(elements(y) / std::max<std::int64_t>(width, 1), rows_grain(width), threads,
        [&](std::int64_t q0, std::int64_t q1) {
          for (std::int64_t q = q0; q < q1; ++q) {
            float* dst = out + q * width;
            std::int64_t src = 0;  // the row's start in x, or -1 where an outer dim reads the constant
            for (std::int64_t d = std::int64_t(r) - 2, rest = q; d >= 0 && src >= 0; rest /= y[std::size_t(d)], --d) {
              const std::int64_t at = maps[std::size_t(d)][std::size_t(rest % y[std::size_t(d)])];
              src = at < 0 ? -1 : src + at * in_stride[std::size_t(d)];
            }
            if (src < 0) {
              std::fill(dst, dst + width, value);
              continue;
            }
            const float* row = in + src;
            for (std::int64_t j = 0; j < run0; ++j)
              dst[j] = cols[std::size_t(j)] < 0 ? value : row[cols[std::size_t(j)]];
            if (run1 > run0)
              std::copy(row + cols[std::size_t(run0)], row + cols[std::size_t(run0)] + (run1 - run0), dst + run0);
            for (std::int64_t j = run1; j < width; ++j)
              dst[j] = cols[std::size_t(j)] < 0 ? value : row[cols[std::size_t(j)]];
          }
        });
}

void tile(const float* x, const Shape& xs, float* y, const Shape& ys) {
  const std::size_t r = ys.size();
  std::vector<std::int64_t> stride(r, 1), index(r, 0);
  for (int d = int(r) - 2; d >= 0; --d) stride[d] = stride[d + 1] * xs[d + 1];
  const std::int64_t n = elements(ys);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t src = 0;
    for (std::size_t d = 0; d < r; ++d) src += index[d] % xs[d] * stride[d];
    y[i] = x[src];
    for (int d = int(r) - 1; d >= 0; --d) {
      if (++index[d] < ys[d]) break;
      index[d] = 0;
    }
  }
}

namespace {

// The input coordinate of output coordinate o along a dim of in -> out with scale s (ONNX's
// coordinate_transformation_mode).
double source_coordinate(const std::string& mode, std::int64_t o, std::int64_t in, std::int64_t out, float s) {
  // In float, as ONNX Runtime computes it: nearest mode rounds a coordinate at an exact half
  // (3.5 / 0.7f - 0.5 = 4.5 in float) the other way when double puts it a hair above.
  const float x = float(o);
  if (mode == "align_corners") return out > 1 ? double(x * float(in - 1) / float(out - 1)) : 0.0;
  if (mode == "asymmetric") return double(x / s);
  if (mode == "pytorch_half_pixel") return out > 1 ? double((x + 0.5f) / s - 0.5f) : 0.0;
  return double((x + 0.5f) / s - 0.5f);  // half_pixel
}

std::int64_t nearest_index(const std::string& mode, double v, std::int64_t in) {
  double i = 0;
  if (mode == "floor")
    i = std::floor(v);
  else if (mode == "ceil")
    i = std::ceil(v);
  else if (mode == "round_prefer_ceil")
    i = std::floor(v + 0.5);
  else
    i = v == std::floor(v) + 0.5 ? std::floor(v) : std::round(v);  // round_prefer_floor
  return std::clamp<std::int64_t>(std::int64_t(i), 0, in - 1);
}

}  // namespace

namespace {

// Where output index o of an axis reads: two input indices and the second's weight (linear),
// or one index twice (nearest).
struct AxisTap {
  std::int64_t i0 = 0, i1 = 0;
  float f = 0;
};
AxisTap axis_tap(const ResizeAttrs& a, std::int64_t o, std::int64_t in, std::int64_t out, float scale) {
  const double v = source_coordinate(a.coordinates, o, in, out, scale);
  if (!a.linear) {
    const std::int64_t i = nearest_index(a.nearest, v, in);
    return {i, i, 0.0f};
  }
  const double c = std::clamp(v, 0.0, double(in - 1));
  const std::int64_t i0 = std::int64_t(c);
  return {i0, std::min(i0 + 1, in - 1), float(c - double(i0))};
}

// Cubic mode's four taps along one axis (input indices clamped to the image, as ONNX Runtime
// replicates the edge) and their weights for the fraction t past floor(v) (Keys' kernel with
// coefficient a); with exclude_outside, a tap outside the image weighs 0 and the others are
// scaled to sum to 1.
struct CubicTaps {
  std::int64_t i[4];
  float w[4];
};
CubicTaps cubic_taps(const ResizeAttrs& a, std::int64_t o, std::int64_t in, std::int64_t out, float scale) {
  const double v = source_coordinate(a.coordinates, o, in, out, scale);
  const double base = std::floor(v);
  CubicTaps c;
  plain::keys_weights(float(v - base), a.cubic_a, c.w);
  float total = 0;
  for (int k = 0; k < 4; ++k) {
    const std::int64_t at = std::int64_t(base) - 1 + k;
    if (a.exclude_outside && (at < 0 || at >= in)) c.w[k] = 0;
    c.i[k] = std::clamp<std::int64_t>(at, 0, in - 1);
    total += c.w[k];
  }
  if (a.exclude_outside && total != 0) {
    for (float& w : c.w) w /= total;
  }
  return c;
}

// One output pixel of c channels from its sixteen input pixels (cubic mode).
void cubic_pixel(const float* src, std::int64_t w, std::int64_t c, const CubicTaps& ty, const CubicTaps& tx,
                 float* dst) {
  for (std::int64_t k = 0; k < c; ++k) {
    float sum = 0;
    for (int r = 0; r < 4; ++r) {
      float row = 0;
      for (int q = 0; q < 4; ++q) row += tx.w[q] * src[(ty.i[r] * w + tx.i[q]) * c + k];
      sum += ty.w[r] * row;
    }
    dst[k] = sum;
  }
}

// One output pixel of c channels from its four input pixels (rows r0, r1, columns c0, c1).
ATVOSS_INLINE void blend_pixel_body(const float* p00, const float* p01, const float* p10, const float* p11, float fx,
                                    float fy, std::int64_t c, float* dst) {
  for (std::int64_t k = 0; k < c; ++k) {
    const float top = p00[k] + (p01[k] - p00[k]) * fx, bottom = p10[k] + (p11[k] - p10[k]) * fx;
    dst[k] = top + (bottom - top) * fy;
  }
}
ATVOSS_BUILT_TWICE(blend_pixel,
                   (const float* p00, const float* p01, const float* p10, const float* p11, float fx, float fy,
                    std::int64_t c, float* dst),
                   (p00, p01, p10, p11, fx, fy, c, dst))

}  // namespace

void resize_nd(const float* x, const Shape& xs, float* y, const Shape& ys, const ResizeAttrs& a,
               const std::vector<float>& scales, int threads) {
  const std::size_t rank = xs.size() - 2;
  std::vector<std::vector<AxisTap>> taps(rank);  // each spatial dim's, by output index
  std::vector<std::int64_t> stride(rank, 1);
  for (std::size_t d = rank; d-- > 0;) {
    if (d + 1 < rank) stride[d] = stride[d + 1] * xs[d + 3];
    for (std::int64_t o = 0; o < ys[d + 2]; ++o) taps[d].push_back(axis_tap(a, o, xs[d + 2], ys[d + 2], scales[d + 2]));
  }
  const std::int64_t in_plane = elements(Shape(xs.begin() + 2, xs.end()));
  const std::int64_t out_plane = elements(Shape(ys.begin() + 2, ys.end()));
  const int corners = a.linear ? 1 << rank : 1;
  split(xs[0] * xs[1], 1, threads, [&](std::int64_t q0, std::int64_t q1) {
    std::vector<std::int64_t> at(rank);
    for (std::int64_t q = q0; q < q1; ++q) {
      const float* src = x + q * in_plane;
      std::fill(at.begin(), at.end(), 0);
      for (std::int64_t p = 0; p < out_plane; ++p) {
        float sum = 0;  // the corners' blend: each weighs the product of its axes' fractions
        for (int corner = 0; corner < corners; ++corner) {
          float weight = 1;
          std::int64_t offset = 0;
          for (std::size_t d = 0; d < rank; ++d) {
            const AxisTap& t = taps[d][std::size_t(at[d])];
            const bool far = (corner >> d) & 1;
            weight *= a.linear ? (far ? t.f : 1 - t.f) : 1.0f;
            offset += (far ? t.i1 : t.i0) * stride[d];
          }
          sum += weight * src[offset];
        }
        y[q * out_plane + p] = sum;
        for (std::size_t d = rank; d-- > 0;) {
          if (++at[d] < ys[d + 2]) break;
          at[d] = 0;
        }
      }
    }
  });
}

// Output rows split over the threads; in NHWC each output pixel is its input pixels' c
// channels copied or blended in one contiguous run (YOLO's 2x nearest upsample took 4.3 ms in
// ONNX order with its two layout changes).
void resize(const float* x, const Shape& xs, float* y, const Shape& ys, const ResizeAttrs& a, bool nhwc, int threads) {
  const std::int64_t c = nhwc ? xs[1] : 1, images = nhwc ? xs[0] : xs[0] * xs[1];
  const std::int64_t h = xs[2], w = xs[3], oh = ys[2], ow = ys[3];
  const auto blend = blend_pixel_here();
  // Each output column's taps, the same on every row.
  std::vector<AxisTap> columns;
  std::vector<CubicTaps> cubic_columns;
  for (std::int64_t j = 0; j < ow; ++j) {
    if (a.cubic)
      cubic_columns.push_back(cubic_taps(a, j, w, ow, a.scale_w));
    else
      columns.push_back(axis_tap(a, j, w, ow, a.scale_w));
  }
  split(images * oh, rows_grain(ow * c), threads, [&](std::int64_t r0, std::int64_t r1) {
    std::int64_t last_row = -1;  // the input row the output row before read (nearest mode)
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* src = x + r / oh * h * w * c;
      float* dst = y + r * ow * c;
      if (a.cubic) {
        const CubicTaps ty = cubic_taps(a, r % oh, h, oh, a.scale_h);
        for (std::int64_t j = 0; j < ow; ++j) cubic_pixel(src, w, c, ty, cubic_columns[std::size_t(j)], dst + j * c);
        continue;
      }
      const AxisTap ty = axis_tap(a, r % oh, h, oh, a.scale_h);
      if (!a.linear) {
        // An upsampled row reads the input row the row before it read: a copy of that row.
        const bool again = r % oh > 0 && ty.i0 == last_row;
        last_row = ty.i0;
        if (again) {
          std::copy_n(dst - ow * c, ow * c, dst);
          continue;
        }
        const float* row = src + ty.i0 * w * c;
        if (c == 1) {
          for (std::int64_t j = 0; j < ow; ++j) dst[j] = row[columns[std::size_t(j)].i0];
        } else {
          for (std::int64_t j = 0; j < ow; ++j) std::copy_n(row + columns[std::size_t(j)].i0 * c, c, dst + j * c);
        }
        continue;
      }
      if (c == 1) {  // a plane (ONNX order): the blend inline, not a call per pixel
        const float *top = src + ty.i0 * w, *bottom = src + ty.i1 * w;
        for (std::int64_t j = 0; j < ow; ++j) {
          const AxisTap& tx = columns[std::size_t(j)];
          const float t = top[tx.i0] + (top[tx.i1] - top[tx.i0]) * tx.f;
          const float b = bottom[tx.i0] + (bottom[tx.i1] - bottom[tx.i0]) * tx.f;
          dst[j] = t + (b - t) * ty.f;
        }
        continue;
      }
      for (std::int64_t j = 0; j < ow; ++j) {
        const AxisTap& tx = columns[std::size_t(j)];
        blend(src + (ty.i0 * w + tx.i0) * c, src + (ty.i0 * w + tx.i1) * c, src + (ty.i1 * w + tx.i0) * c,
              src + (ty.i1 * w + tx.i1) * c, tx.f, ty.f, c, dst + j * c);
      }
    }
  });
}

}  // namespace atvoss::engine
