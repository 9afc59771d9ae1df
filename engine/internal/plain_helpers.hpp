// What the plain ops' sources share (plain_ops.hpp): an odometer over broadcast shapes and the
// strides of a shape broadcast to a rank. Private to engine/.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/plain_ops.hpp"

namespace atvoss::engine::plain {

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

}  // namespace atvoss::engine::plain
