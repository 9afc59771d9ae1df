// What the plain ops' sources share (plain_ops.hpp): an odometer over broadcast shapes, the
// strides of a shape broadcast to a rank, a shape seen around one axis, e^x's polynomial and
// Keys' cubic weights.
// Private to engine/.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/plain_ops.hpp"
#include "engine/vector_build.hpp"

namespace atvoss::engine::plain {

// A shape seen as [outer, len, inner] around one axis: the dims before it, it, the dims after.
struct AroundAxis {
  std::int64_t outer = 1, len = 1, inner = 1;
};
inline AroundAxis around_axis(const Shape& x, std::size_t axis) {
  AroundAxis a;
  for (std::size_t d = 0; d < axis; ++d) a.outer *= x[d];
  a.len = x[axis];
  for (std::size_t d = axis + 1; d < x.size(); ++d) a.inner *= x[d];
  return a;
}

// Counts over the extents `size` in row-major order, offsets `a` and `b` moving by their
// strides per unit of each dim (an odometer; seek starts it at any count).
struct Odometer {
  std::vector<std::int64_t> size, sa, sb, index;
  std::int64_t a = 0, b = 0;
  void seek(std::int64_t i) {
    index.assign(size.size(), 0);
    a = b = 0;
    for (std::size_t k = size.size(); k-- > 0;) {
      index[k] = i % size[k];
      i /= size[k];
      a += index[k] * sa[k];
      b += index[k] * sb[k];
    }
  }
  void next() {
    for (std::size_t k = size.size(); k-- > 0;) {
      ++index[k];
      a += sa[k];
      b += sb[k];
      if (index[k] < size[k]) return;
      a -= sa[k] * size[k];
      b -= sb[k] * size[k];
      index[k] = 0;
    }
  }
};

// Strides of shape s aligned right to rank r, 0 along the dims s broadcasts (size 1 or absent).
inline std::vector<std::int64_t> broadcast_strides(const Shape& s, std::size_t r) {
  std::vector<std::int64_t> st(r, 0);
  std::int64_t step = 1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::size_t d = s.size() - 1 - i, o = r - 1 - i;
    st[o] = s[d] == 1 ? 0 : step;
    step *= s[d];
  }
  return st;
}

// Keys' cubic convolution weights of the four taps at floor(v) - 1 ... floor(v) + 2 for the
// fraction t = v - floor(v) in [0, 1), with coefficient a (Resize's cubic_coeff_a; GridSample's
// -0.75).
inline void keys_weights(float t, float a, float w[4]) {
  const auto inner = [a](float x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };        // |x| <= 1
  const auto outer = [a](float x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  w[0] = outer(1 + t);
  w[1] = inner(t);
  w[2] = inner(1 - t);
  w[3] = outer(2 - t);
}

// e = e^x / 2^n over x = n ln 2 + r (Cody and Waite's reduction; fn: n as a T, n rounded from
// x log2 e) by Cephes' degree-7 polynomial for e^r, |r| <= ln 2 / 2 (relative error about
// 2e-7). T: float, or a GCC vector of floats (loops::Vec16), by reference: a vector
// argument's ABI depends on AVX-512.
template <class T>
ATVOSS_INLINE void exp_of_reduced(const T& x, const T& fn, T& e) {
  const T r = (x - fn * 0.693359375f) + fn * 2.12194440e-4f;
  T p = T{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  e = p * r * r + r + 1.0f;
}

}  // namespace atvoss::engine::plain
