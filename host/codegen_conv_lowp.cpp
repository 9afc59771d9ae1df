// The int8 and bf16 conv2d's kernel text (codegen_conv.hpp): the matmul's k groups
// (codegen_lowp.hpp) over each window tap, and the image's walk over the weight blocks.
#include "host/internal/conv_codegen.hpp"

namespace atvoss::host {
namespace {

constexpr const char* kConvLowp = R"(
// int8 / bf16 conv2d: the matmul's k groups (KG channels sharing a 32-bit lane) over each
// window tap. Packed weights: panels of NR output channels, each channel block's
// [r][s][group][NR][KG] (zero past C and K), packed with the first image.
constexpr long NP = (K + NR - 1) / NR;
constexpr long PANEL = R * S * CP * NR;  // elements of one panel: every channel block
constexpr long CBLK = ((CB < CP ? CB : CP) + KG - 1) / KG * KG;  // a channel block, whole groups
constexpr long PACKED = NP * PANEL;

inline TB* panel(TB* wp, long j0, long jr, long c0) { return wp + (j0 + jr) / NR * PANEL + c0 * R * S * NR; }

// Block (output channels [j0, j0 + nc), padded channels [c0, c0 + kc)) of the HWIO weights,
// read as the (R * S * C) x K matrix it is: a group of KG channels is KG rows LDB apart.
void pack_block(const TB* w, TB* wp, long j0, long nc, long c0, long kc) {
  const long groups = kc / KG;
  PARALLEL_FOR
  for (long t = 0; t < R * S * groups; ++t) {
    const long rs = t / groups, q = t % groups, ch = c0 + q * KG;
    for (long jb = 0; jb < nc; jb += NR) {
      const long cols = nc - jb < NR ? nc - jb : NR;
      TB* dst = panel(wp, j0, jb, c0) + t * NR * KG;
      const TB* src = w + (rs * C + ch) * K + j0 + jb;
      if (cols == NR && ch + KG <= C) {
        interleave(src, dst);
        continue;
      }
      for (long c = 0; c < NR; ++c)
        for (long e = 0; e < KG; ++e) dst[c * KG + e] = c < cols && ch + e < C ? src[e * K + c] : TB(0);
    }
  }
}

// Rows of a micro-tile (write_back's Rows): each pixel's output and residual row.
struct PixelRows {
  float* const* cp;
  const float* const* rp;
  float* c(long r) const { return cp[r]; }
  const float* res(long r) const { return rp[r]; }
};

// One window tap's k groups for pixels [LO, MR - HI) of the micro-tile (ap at offset off).
template <int LO, int HI, class Pixels>
__attribute__((always_inline)) inline void tap(ACC (&acc)[MR][NV], const Pixels& ap, long off,
                                               const TB* __restrict bb, long groups) {
#pragma GCC unroll UNROLL
  for (long q = 0; q < groups; ++q) {
    if constexpr (PF > 0) __builtin_prefetch(bb + (q + PF) * NR * KG);
    dot_group<LO, HI>(acc, [&](long i) { return ap(i) + off + q * KG; }, bb + q * NR * KG);
  }
}

// MR pixels (inputs ap at channel c0) x NR output channels from col0 over the taps tp and the
// kc channels of a block (b: its packed panel).
template <class Pixels>
inline void micro(long kc, const Pixels& ap, const Taps& tp, const TB* __restrict b, const Tile& t, long nr, bool first,
                  bool last, const AtvossArgs& g, long col0, const int* comp) {
  ACC acc[MR][NV];
#pragma GCC unroll 16
  for (long i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) acc[i][v] = ACC{};
  const long groups = kc / KG;
  for (long r = tp.r0; r < tp.r1; ++r) {
    for (long s = 0; s < S; ++s) {
      const long off = (r * WP + s) * CP;
      const TB* bb = b + (r * S + s) * groups * NR * KG;
      switch (tp.edge[s]) {
        case 0: tap<0, 0>(acc, ap, off, bb, groups); break;
        case 1: tap<1, 0>(acc, ap, off, bb, groups); break;
        case 2: tap<0, 1>(acc, ap, off, bb, groups); break;
        default: tap<1, 1>(acc, ap, off, bb, groups); break;
      }
    }
  }
  write_block(acc, PixelRows{t.c, t.r}, t.mr, nr, first, last, g, col0, comp);
}

// One pixel block (np pixels) x output channels [j0, j0 + nc) x padded channels [c0, c0 + kc).
void block(const TA* in, TB* wp, float* out, const float* res, const long* io, const long* oo, long np,
           const WeightBlock& wb, const AtvossArgs& g, const int* comp) {
  const long j0 = wb.j0, nc = wb.nc, c0 = wb.c0, kc = wb.kc;
  const bool first = c0 == 0, last = c0 + kc >= CP;
  for_tiles<ORDER == 2>(np, wb.s0, wb.s1, [&](long ir, long jr) {
    const Tile t = tile_at(in, out, res, io, oo, np, ir, c0, j0 + jr, ldc_of(g));
    const long nr = nc - jr < NR ? nc - jr : NR;
    with_pixels(t, io, oo, ir, [&](const auto& pixels, const Taps& taps) {
      micro(kc, pixels, taps, panel(wp, j0, jr, c0), t, nr, first, last, g, j0 + jr, comp);
    });
  });
}

)";

constexpr const char* kConvLowpImage = R"(
// The weights are packed with the first image, every block; then the blocks run as in fp32.
void conv_image(const TA* in, const TB* w, TB* wp, float* out, const float* res, bool pack, const AtvossArgs& g,
                const int* comp) {
  if (pack) for_weight_blocks([&](const WeightBlock& b) { pack_block(w, wp, b.j0, b.nc, b.c0, b.kc); });
  for_blocks(false, [](const WeightBlock&) {},
             [&](const WeightBlock& b, bool, const WeightBlock*, const long* io, const long* oo, long np) {
               block(in, wp, out, res, io, oo, np, b, g, comp);
             });
}
)";

}  // namespace

const char* conv_lowp_text() { return kConvLowp; }
const char* conv_lowp_image_text() { return kConvLowpImage; }

}  // namespace atvoss::host
