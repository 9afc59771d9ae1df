// A conv's output split into regions where each tap reads the image everywhere or nowhere
// (frontend/phase_conv.hpp): ASPP's dilations on a feature map near their size, the spans of
// one axis with strides and uneven pads, and the convs the split does not pay for.
#include "frontend/phase_conv.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace atvoss::frontend {

// Found by argument-dependent lookup from std::equal: in TapSpan's namespace.
bool operator==(const TapSpan& a, const TapSpan& b) {
  return a.out_begin == b.out_begin && a.out_end == b.out_end && a.tap_begin == b.tap_begin && a.tap_end == b.tap_end;
}

namespace {

// Each output's taps that read the input, counted directly from the conv's arithmetic.
std::int64_t reading_taps(std::int64_t o, std::int64_t in, std::int64_t taps, std::int64_t stride, std::int64_t pad,
                          std::int64_t dilation) {
  std::int64_t n = 0;
  for (std::int64_t t = 0; t < taps; ++t) {
    const std::int64_t i = o * stride - pad + t * dilation;
    n += i >= 0 && i < in ? 1 : 0;
  }
  return n;
}

TEST(TapSpans, AsppDilationsOnAThirtyTwoPixelMap) {
  // Rate 24: the outer taps reach the image only within 8 pixels of the far edge.
  EXPECT_EQ(tap_spans(32, 32, 3, 1, 24, 24), (std::vector<TapSpan>{{0, 8, 1, 3}, {8, 24, 1, 2}, {24, 32, 0, 2}}));
  // Rate 36: only the centre tap ever reads the image.
  EXPECT_EQ(tap_spans(32, 32, 3, 1, 36, 36), (std::vector<TapSpan>{{0, 32, 1, 2}}));
  // Rate 1, pad 1: a dense 3x3's border rows lose one tap.
  EXPECT_EQ(tap_spans(8, 8, 3, 1, 1, 1), (std::vector<TapSpan>{{0, 1, 1, 3}, {1, 7, 0, 3}, {7, 8, 0, 2}}));
}

TEST(TapSpans, EveryOutputReadsExactlyTheTapsItsSpanNames) {
  struct Axis {
    std::int64_t in, out, taps, stride, pad, dilation;
  };
  // Strides, uneven pads (the end pad is whatever the output size implies), rates past the image.
  for (const Axis& a : {Axis{37, 37, 3, 1, 12, 12}, Axis{21, 11, 3, 2, 6, 6}, Axis{20, 9, 5, 3, 7, 4},
                        Axis{13, 13, 7, 1, 3, 1}, Axis{9, 9, 3, 1, 18, 18}, Axis{17, 4, 3, 4, 0, 5}}) {
    const auto spans = tap_spans(a.in, a.out, a.taps, a.stride, a.pad, a.dilation);
    std::int64_t next = 0;
    for (const TapSpan& s : spans) {
      EXPECT_EQ(s.out_begin, next);
      next = s.out_end;
      for (std::int64_t o = s.out_begin; o < s.out_end; ++o) {
        EXPECT_EQ(reading_taps(o, a.in, a.taps, a.stride, a.pad, a.dilation), s.tap_end - s.tap_begin) << o;
        for (std::int64_t t = s.tap_begin; t < s.tap_end; ++t) {
          const std::int64_t i = o * a.stride - a.pad + t * a.dilation;
          EXPECT_TRUE(i >= 0 && i < a.in) << "output " << o << " tap " << t;
        }
      }
    }
    EXPECT_EQ(next, a.out);
  }
}

TEST(SparseConvRegions, AsppRatesSplitAndDenseConvsDoNot) {
  const ConvAxis rate24{32, 32, 3, 1, 24, 24}, rate36{32, 32, 3, 1, 36, 36};
  const auto nine = sparse_conv_regions(rate24, rate24);
  ASSERT_EQ(nine.size(), 9u);
  std::int64_t pixels = 0, work = 0;
  for (const ConvRegion& r : nine) pixels += r.pixels(), work += r.pixels() * r.taps();
  EXPECT_EQ(pixels, 32 * 32);
  EXPECT_EQ(work, 32 * 32 * 9 / 4);  // a quarter of the im2col matmul's
  const auto one = sparse_conv_regions(rate36, rate36);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].taps(), 1);
  EXPECT_EQ(largest_region(nine).pixels() * largest_region(nine).taps(), 256);
  // A 1-D conv: one row, the split along its length only.
  EXPECT_EQ(sparse_conv_regions(ConvAxis{}, rate24).size(), 3u);
  // DeepLabv3 at 520: rate 12 on a 65-pixel map leaves 0.77 of the work, and splits; Inception
  // v3's 1x7 with pad 3 on 17 pixels leaves 0.90 (seven narrow regions), and does not.
  EXPECT_EQ(sparse_conv_regions({65, 65, 3, 1, 12, 12}, {65, 65, 3, 1, 12, 12}).size(), 9u);
  EXPECT_TRUE(sparse_conv_regions({17, 17, 1, 1, 0, 1}, {17, 17, 7, 1, 3, 1}).empty());
  // Dense 3x3s with pad 1 lose few taps at the border: one im2col matmul.
  EXPECT_TRUE(sparse_conv_regions({8, 8, 3, 1, 1, 1}, {8, 8, 3, 1, 1, 1}).empty());
  EXPECT_TRUE(sparse_conv_regions({56, 56, 3, 1, 1, 1}, {56, 56, 3, 1, 1, 1}).empty());
  // A pad so wide that some outputs read no tap at all: their bias alone is no matmul.
  EXPECT_TRUE(sparse_conv_regions({4, 12, 3, 1, 5, 1}, {4, 12, 3, 1, 5, 1}).empty());
}

}  // namespace
}  // namespace atvoss::frontend
