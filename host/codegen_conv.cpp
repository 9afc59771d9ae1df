#include "host/codegen_conv.hpp"

#include "host/internal/conv_codegen.hpp"

#include <algorithm>
#include <sstream>

#include "host/codegen.hpp"
#include "host/codegen_lowp.hpp"
#include "host/vector_code.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

// The zero-bordered input copy, the pixel blocks and the micro-tiles of a block; the unit the
// threads share is a pixel block (an output tile), whose outputs no other block writes.
constexpr const char* kCommon = R"(
constexpr long HP = H + 2 * PAD, WP = W + 2 * PAD;
constexpr long BH = TH < OH ? TH : OH, BW = TW < OW ? TW : OW;
constexpr long NBW = (OW + TW - 1) / TW, BLOCKS = (OH + TH - 1) / TH * NBW;  // pixel blocks

// Floats from one output pixel to the next: the caller's c_ld, else dense (kernel_abi.hpp).
inline long ldc_of(const AtvossArgs& g) { return g.c_ld ? g.c_ld : COLS; }

// One image into the interior of the padded buffer, CP channels a pixel. The border and the
// channels past C hold `fill`: written once (zero, the buffer's first state) unless REFILL
// (int8's fill is the input's zero point, which may change from call to call).
const TIN* padded(const TIN* img, TIN* buf, TIN fill) {
  if constexpr (PAD == 0 && CP == C) return img;
  PARALLEL_FOR
  for (long hp = 0; hp < HP; ++hp) {
    TIN* row = buf + hp * WP * CP;
    const long h = hp - PAD;
    const bool border = h < 0 || h >= H;
    if constexpr (REFILL) {
      for (long x = 0; x < (border ? WP * CP : PAD * CP); ++x) row[x] = fill;
      if (!border)
        for (long x = (WP - PAD) * CP; x < WP * CP; ++x) row[x] = fill;
    }
    if (border) continue;
    if constexpr (CP == C) {
      std::memcpy(row + PAD * CP, img + h * W * C, W * C * sizeof(TIN));
    } else {
      for (long x = 0; x < W; ++x) {
        std::memcpy(row + (PAD + x) * CP, img + (h * W + x) * C, C * sizeof(TIN));
        for (long c = C; c < CP; ++c) row[(PAD + x) * CP + c] = fill;
      }
    }
  }
  return buf;
}

// The pixels of pixel block pb (row-major over the blocks): input offsets (padded image) and
// output rows; returns how many.
long pixel_block(long pb, long* io, long* oo) {
  const long oh0 = pb / NBW * TH, ow0 = pb % NBW * TW;
  const long bh = OH - oh0 < TH ? OH - oh0 : TH, bw = OW - ow0 < TW ? OW - ow0 : TW;
  long p = 0;
  for (long y = 0; y < bh; ++y) {
    for (long x = 0; x < bw; ++x, ++p) {
      io[p] = ((oh0 + y) * STRIDE * WP + (ow0 + x) * STRIDE) * CP;
      oo[p] = (oh0 + y) * OW + ow0 + x;
    }
  }
  return p;
}

// The MR pixels of the micro-tile at pixel ir of a block of np (past the block the last one
// repeats; mr are valid): input pointers at channel ch, output and residual rows at column col.
struct Tile {
  const TIN* a[MR];
  float* c[MR];
  const float* r[MR];
  long mr;
};
inline Tile tile_at(const TIN* in, float* out, const float* res, const long* io, const long* oo, long np, long ir,
                    long ch, long col, long ldc) {
  Tile t;
  t.mr = np - ir < MR ? np - ir : MR;
#pragma GCC unroll 16
  for (long i = 0; i < MR; ++i) {
    const long p = ir + (i < t.mr ? i : t.mr - 1);
    t.a[i] = in + io[p] + ch;
    t.c[i] = out + oo[p] * ldc + col;
    t.r[i] = res ? res + oo[p] * COLS : nullptr;
  }
  return t;
}

// A micro-tile's input pixels at its channel: any MR pixels (a pointer each), or MR pixels in
// a row of the image (one pointer and a fixed step, which the micro-kernel's loads take as
// displacements: the MR pointers of the general case do not fit the general registers beside
// the loop's own and spill to the stack; docs/host-backend.md "Conv taps in the border").
struct AnyPixels {
  const TIN* const* p;
  const TIN* operator()(long i) const { return p[i]; }
};
struct PixelRun {
  const TIN* p;
  const TIN* operator()(long i) const { return p + i * (STRIDE * CP); }
};
// The window taps a micro-tile computes: rows [r0, r1) of the window, and per column s of it
// whether the tile's first (bit 0) or last (bit 1) pixel reads the zero border there, so the
// micro-kernel skips those FMAs (docs/host-backend.md "Conv taps in the border"). Only a tile
// of MR pixels in one output row of a kernel whose border is zero knows its taps; any other
// computes them all (int8's border holds the zero point, which its compensation counts on
// every tap; elsewhere the border's zeros add nothing).
struct Taps {
  long r0 = 0, r1 = R;
  unsigned char edge[S] = {};
  bool edges = false;  // some column's bits are set
};
inline bool in_border(long x, long limit) { return x < 0 || x >= limit; }
inline Taps taps_of(long oh, long ow0) {
  Taps t;
  if constexpr (PAD > 0) {
    const long y = oh * STRIDE - PAD, x0 = ow0 * STRIDE - PAD, x1 = (ow0 + MR - 1) * STRIDE - PAD;
    t.r0 = y < 0 ? -y : 0;
    t.r1 = H - y < R ? H - y : R;
    for (long s = 0; s < S; ++s) {
      t.edge[s] = (in_border(x0 + s, W) ? 1 : 0) | (in_border(x1 + s, W) ? 2 : 0);
      t.edges = t.edges || t.edge[s] != 0;
    }
  }
  return t;
}

// f(pixels, taps) with the accessor that fits the micro-tile at pixel ir of the block (io, oo:
// its input and output offsets).
template <class F>
inline void with_pixels(const Tile& t, const long* io, const long* oo, long ir, F f) {
  const bool run = t.mr == MR && io[ir + MR - 1] - io[ir] == (MR - 1) * STRIDE * CP;
  if (ZERO_BORDER && run && oo[ir] / OW == oo[ir + MR - 1] / OW) f(PixelRun{t.a[0]}, taps_of(oo[ir] / OW, oo[ir] % OW));
  else if (run) f(PixelRun{t.a[0]}, Taps{});
  else f(AnyPixels{t.a}, Taps{});
}

// tile(ir, jr) over the micro-tiles of np pixels x columns [j_lo, j_hi) (j_lo a whole number of
// panels), pixel tiles or column panels outer.
template <bool PIXELS_OUTER, typename F>
inline void for_tiles(long np, long j_lo, long j_hi, F tile) {
  if constexpr (PIXELS_OUTER) {
    for (long ir = 0; ir < np; ir += MR)
      for (long jr = j_lo; jr < j_hi; jr += NR) tile(ir, jr);
  } else {
    for (long jr = j_lo; jr < j_hi; jr += NR)
      for (long ir = 0; ir < np; ir += MR) tile(ir, jr);
  }
}

// A conv2d weight block (kWeightBlocks): output channels [j0, j0 + nc) x input channels
// [c0, c0 + kc); its tiles run over columns [s0, s1) of it (the whole block, or one slice).
struct WeightBlock {
  long j0, nc, c0, kc, s0, s1;
};
)";

// conv2d: packed weights, register block of MR pixels x NR output channels.
constexpr const char* kConv = R"(
constexpr long NP = (K + NR - 1) / NR;  // panels of NR output channels
constexpr long PANEL = R * S * C * NR;  // one panel: every channel block, [r][s][c][NR] each
// RING: a packed block is used only while its loops run (one image, the weight blocks outer:
// orders 0 and 2), so one block-sized buffer, which stays in cache, is reused for every block;
// else the whole packed weights are kept, packed during the first image.
constexpr bool RING = N == 1 && ORDER != 1;
constexpr long NCP = (NC < K ? NC : (K + NR - 1) / NR * NR);  // columns of a packed block
constexpr long FULL = NP * PANEL;                // floats of the whole packed weights
constexpr long PACKED = RING ? R * S * CB * NCP : FULL;  // floats of the packed buffer

// The packed panel of columns [j0 + jr, j0 + jr + NR) in the block of channels [c0, c0 + kc):
// in the ring buffer, or (ring false: whole weights, packed in a call or once outside it) in
// the whole packed weights.
inline float* panel(float* wp, long j0, long jr, long c0, long kc, bool ring) {
  if (RING && ring) return wp + jr / NR * (R * S * kc * NR);
  return wp + (j0 + jr) / NR * PANEL + c0 * R * S * NR;
}
constexpr long BSTRIDE = INPLACE ? K : NR;  // floats from one weight row to the next

// Streamed weights (b_row's Ahead): where a thread first reads a block's panels (orders 0 and
// 1: panels outer), its micro-tiles of a panel prefetch the next one; the last pixel block of a
// thread prefetches the next block's first panel. ResNet-50's 7x7 layers ran at 1.6x their
// time with warm weights.
constexpr bool STREAM = !INPLACE && ORDER != 2;

// Packed weights: panels of NR output channels, each [r][s][c][NR] over a block's channels
// (zero past K); where they sit is panel()'s. One block (output channels [j0, j0 + nc),
// channels [c0, c0 + kc)) is packed right before its first use, reading each HWIO row of nc
// weights once, front to back, and scattering it over the panels.
void pack_block(const float* w, float* wp, long j0, long nc, long c0, long kc, bool ring = RING) {
  PARALLEL_FOR
  for (long q = 0; q < R * S * kc; ++q) {
    const long rs = q / kc, c = q % kc;
    const float* src = w + (rs * C + c0 + c) * K + j0;
    const long at = q * NR;
    long j = 0;
    for (; j + NR <= nc; j += NR) std::memcpy(panel(wp, j0, j, c0, kc, ring) + at, src + j, NR * 4);
    if (j < nc) {
      float* dst = panel(wp, j0, j, c0, kc, ring) + at;
      for (long x = 0; x < NR; ++x) dst[x] = j + x < nc ? src[j + x] : 0.0f;
    }
  }
}

// One window tap's FMAs over kc channels for pixels [LO, MR - HI) of the micro-tile.
template <int LO, int HI, bool FULLN>
__attribute__((always_inline)) inline void tap(vf (&acc)[MR][NV], const float* const (&a)[MR],
                                               const float* __restrict bb, long kc, const long (&cnt)[NV],
                                               const Ahead& ahead, long steps) {
#pragma GCC unroll UNROLL
  for (long c = 0; c < kc; ++c) {
    if constexpr (PF > 0) __builtin_prefetch(bb + (c + PF) * BSTRIDE);
    if constexpr (STREAM) prefetch_ahead(ahead, c, steps);
    vf bv[NV];
    b_row<INPLACE, FULLN, K>(bv, bb, c, cnt);
#pragma GCC unroll 16
    for (long i = LO; i < MR - HI; ++i) {
      const float av = a[i][c];
#pragma GCC unroll 8
      for (long v = 0; v < NV; ++v) acc[i][v] += av * bv[v];
    }
  }
}

// MR pixels (input rows ap, output rows cp, residual rows rp) x NR channels from col0,
// reduced over the taps tp of R x S x kc channels of the weights b (packed, or HWIO in place:
// INPLACE); mr/nr of them valid; FULLN: nr == NR (in place, a partial panel loads only nr
// columns). ahead: the lines of the next panel this tile prefetches (STREAM).
template <bool FULLN, class Pixels>
inline void micro(long kc, const Pixels& ap, const Taps& tp, const float* __restrict b, float* const* cp,
                  const float* const* rp, long mr, long nr, bool first, bool last, const AtvossArgs& g,
                  long col0, const Ahead& ahead) {
  vf acc[MR][NV];
#pragma GCC unroll 16
  for (long i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) acc[i][v] = vf{};
  long cnt[NV];
#pragma GCC unroll 8
  for (long v = 0; v < NV; ++v) cnt[v] = nr - v * VL < 0 ? 0 : (nr - v * VL < VL ? nr - v * VL : VL);
  if constexpr (PF > 0) {
    for (long i = 0; i < mr; ++i) __builtin_prefetch(cp[i], 1);
  }
  // A block of all C channels and no tap in the border: each window row's S taps are one run
  // of S x C floats in the input (NHWC) and in the weights, reduced in one loop. A stem's C of
  // 3 never filled the unrolled body of a loop per tap.
  const bool row_run = kc == C && !tp.edges;
  for (long r = tp.r0; r < tp.r1; ++r) {
    for (long s = 0; s < (row_run ? 1 : S); ++s) {
      const long off = (r * WP + s) * C;
      const float* bb = b + (r * S + s) * (INPLACE ? C * K : kc * NR);
      const float* a[MR];
#pragma GCC unroll 16
      for (long i = 0; i < MR; ++i) a[i] = ap(i) + off;
      // The k steps of the taps before and of all taps: this tap's lines of the share.
      const long done = ((r - tp.r0) * S + s) * kc, steps = (tp.r1 - tp.r0) * S * kc;
      const Ahead rest{ahead.p ? ahead.p + done * 64 : nullptr, ahead.lines - done};
      if (row_run) {
        tap<0, 0, FULLN>(acc, a, bb, S * kc, cnt, rest, steps);
        continue;
      }
      switch (tp.edge[s]) {
        case 0: tap<0, 0, FULLN>(acc, a, bb, kc, cnt, rest, steps); break;
        case 1: tap<1, 0, FULLN>(acc, a, bb, kc, cnt, rest, steps); break;
        case 2: tap<0, 1, FULLN>(acc, a, bb, kc, cnt, rest, steps); break;
        default: tap<1, 1, FULLN>(acc, a, bb, kc, cnt, rest, steps); break;
      }
    }
  }
  if (mr == MR && nr == NR) {
#pragma GCC unroll 16
    for (long i = 0; i < MR; ++i) {
#pragma GCC unroll 8
      for (long v = 0; v < NV; ++v) {
        float* p = cp[i] + v * VL;
        vf x = acc[i][v];
        if (!first) x += loadu(p);
        write_out<true>(g, p, x, last, rp[i], col0 + v * VL, VL);
      }
    }
    return;
  }
  for (long i = 0; i < mr; ++i) {
    for (long v = 0; v * VL < nr; ++v) {
      const long n = cnt[v];
      float* p = cp[i] + v * VL;
      vf x = acc[i][v];
      if (!first) x += load_n(p, n);
      write_out<false>(g, p, x, last, rp[i], col0 + v * VL, n);
    }
  }
}

// One pixel block (np pixels) x output channels [j0, j0 + nc) x input channels [c0, c0 + kc).
// first_read: the thread reads the block's panels here first (STREAM prefetches each next one);
// next: the panel the thread reads after this block (prefetched; null if none or unpacked).
void block(const float* in, const float* w, float* wp, float* out, const float* res, const long* io,
           const long* oo, long np, const WeightBlock& wb, bool first_read, const float* next, const AtvossArgs& g,
           bool ring) {
  const long j0 = wb.j0, nc = wb.nc, c0 = wb.c0, kc = wb.kc;
  const bool first = c0 == 0, last = c0 + kc >= C;
  for_tiles<ORDER == 2>(np, wb.s0, wb.s1, [&](long ir, long jr) {
    const Tile t = tile_at(in, out, res, io, oo, np, ir, c0, j0 + jr, ldc_of(g));
    const long nr = nc - jr < NR ? nc - jr : NR;
    const float* b = INPLACE ? w + c0 * K + j0 + jr : panel(wp, j0, jr, c0, kc, ring);
    Ahead ahead;
    if constexpr (STREAM) {
      const bool inside = jr + NR < wb.s1;
      const float* p = inside ? (first_read ? panel(wp, j0, jr + NR, c0, kc, ring) : nullptr) : next;
      ahead = share_of(p, R * S * kc * NR * 4, (np + MR - 1) / MR, ir / MR);
    }
    with_pixels(t, io, oo, ir, [&](const auto& pixels, const Taps& taps) {
      if (INPLACE && nr < NR)
        micro<false>(kc, pixels, taps, b, t.c, t.r, t.mr, nr, first, last, g, j0 + jr, ahead);
      else
        micro<true>(kc, pixels, taps, b, t.c, t.r, t.mr, nr, first, last, g, j0 + jr, ahead);
    });
  });
}

)";

constexpr const char* kConvImage = R"(
// pack: this image packs the weights (the first one). Order 1 packs every weight block first;
// orders 0 and 2 pack each one right before its pixel blocks (its rows split among the threads).
// prepacked: wp holds the whole weights, packed once outside the call; nothing is packed.
void conv_image(const float* in, const float* w, float* wp, float* out, const float* res, bool pack,
                bool prepacked, const AtvossArgs& g) {
  const bool ring = RING && !prepacked;
  if constexpr (ORDER == 1) {
    if (!INPLACE && pack) for_weight_blocks([&](const WeightBlock& b) { pack_block(w, wp, b.j0, b.nc, b.c0, b.kc); });
  }
  for_blocks(!INPLACE && (pack || ring), [&](const WeightBlock& b) { pack_block(w, wp, b.j0, b.nc, b.c0, b.kc); },
             [&](const WeightBlock& b, bool first_read, const WeightBlock* after, const long* io, const long* oo,
                 long np) {
               // The next block's panels are there to prefetch once packed: outside the call,
               // by order 1 before any block, or by an earlier image (never in the ring).
               const bool packed = !ring && (prepacked || ORDER == 1 || !pack);
               const float* next = packed && after ? panel(wp, after->j0, after->s0, after->c0, after->kc, false) : nullptr;
               block(in, w, wp, out, res, io, oo, np, b, first_read, next, g, ring);
             });
}
)";

// The weights packed once, outside the call (kernel_abi.hpp): every block, as the first image
// of a call packs them.
constexpr const char* kPackWeightsText = R"(extern "C" { extern const long atvoss_packed_weight_bytes; }
const long atvoss_packed_weight_bytes = WEIGHT_BYTES;
extern "C" void atvoss_pack_weights(const AtvossArgs* g, void* out) {
  for_weight_blocks([&](const WeightBlock& b) { pack_block(static_cast<const TW*>(g->WEIGHTS), (TW*)out, b.j0, b.nc, b.c0, b.kc FULL_LAYOUT); });
}
)";

}  // namespace

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

long conv_panels(const Workload& w, const Schedule& s) {
  const long nr = s.at(std::string(knobs::micro_n));
  return (std::min(whole_blocks(s.at(std::string(knobs::tile_n)), nr), long(w.dim("K"))) + nr - 1) / nr;
}

long conv_slices(long oh, long ow, long th, long tw, long threads, long panels) {
  // Fewer panels than threads: a slice of none leaves its thread idle while another takes the
  // whole block (a 32-channel conv on two threads ran at one thread's speed).
  if (threads <= 1 || panels < threads) return 1;
  const long rows = (oh + th - 1) / th, cols = (ow + tw - 1) / tw, blocks = rows * cols;
  const long chunk = (blocks + threads - 1) / threads;  // OpenMP's static schedule
  long most = 0;
  for (long t = 0; t < threads; ++t) {
    long pixels = 0;
    for (long b = t * chunk; b < std::min(blocks, (t + 1) * chunk); ++b) {
      pixels += std::min(th, oh - b / cols * th) * std::min(tw, ow - b % cols * tw);
    }
    most = std::max(most, pixels);
  }
  // Slices where the busiest thread would have over a tenth more pixels than an even share.
  return double(most) * double(threads) > 1.1 * double(oh * ow) ? threads : 1;
}

namespace {

// The pack text for a conv of weight type tw in g's field `weights`, `bytes` its size (0: the
// kernel keeps its weights in place and packs none), `full` the extra pack_block argument.
std::string pack_weights_text(const char* tw, const char* weights, const char* bytes, const char* full) {
  std::string t = kPackWeightsText;
  replace_all(t, "WEIGHT_BYTES", bytes);
  replace_all(t, "TW", tw);
  replace_all(t, "WEIGHTS", weights);
  replace_all(t, " FULL_LAYOUT", full);
  return t;
}

// conv2d's weight blocks (output channels outer, blocks of CBLK of the CP input channels inner)
// and the walk over them and the pixel blocks: order 1 splits the pixel blocks among the
// threads, each running every weight block of its own; orders 0 and 2 take one weight block at
// a time (packing it first where the call packs), each thread an even, contiguous share of its
// pixel blocks, the same share of every block; run(block, whether the thread reads its panels
// first, the block the thread runs right after this pixel block (null: none, or the same
// one), the pixel block's offsets and size). Where the pixel blocks do not share out evenly
// (SLICES, conv_slices), each block's output channels are cut into THREADS slices of whole
// panels too, so every thread gets an equal share of every pixel block (docs/host-backend.md
// "The threads knob").
constexpr const char* kWeightBlocks = R"(
constexpr long NCB = (CP + CBLK - 1) / CBLK, WBLOCKS = (K + NC - 1) / NC * NCB;
inline WeightBlock weight_block(long q) {
  const long j0 = q / NCB * NC, c0 = q % NCB * CBLK, nc = K - j0 < NC ? K - j0 : NC;
  return {j0, nc, c0, CP - c0 < CBLK ? CP - c0 : CBLK, 0, nc};
}
// Slice s of SLICES of b's panels.
inline WeightBlock slice_of(WeightBlock b, long s) {
  const long panels = (b.nc + NR - 1) / NR;
  b.s0 = cut(panels, SLICES, s, NR, b.nc);
  b.s1 = cut(panels, SLICES, s + 1, NR, b.nc);
  return b;
}

template <class F>
inline void for_weight_blocks(F f) {
  for (long q = 0; q < WBLOCKS; ++q) f(weight_block(q));
}

// Slice `slice` of the weight block after q, or an empty block (nc 0) after the last.
inline WeightBlock block_after(long q, long slice) {
  return q + 1 < WBLOCKS ? slice_of(weight_block(q + 1), slice) : WeightBlock{};
}

// Thread t's share of the (pixel block, slice) items of weight block q: run on each.
template <class Run>
inline void run_share(long t, long q, Run& run) {
  const WeightBlock b = weight_block(q);
  const long i0 = BLOCKS * SLICES * t / THREADS, i1 = BLOCKS * SLICES * (t + 1) / THREADS;
  for (long item = i0; item < i1; ++item) {
    long io[BH * BW], oo[BH * BW];
    const long np = pixel_block(item % BLOCKS, io, oo);
    // A thread's first pixel block reads the block's panels first (from memory, in a model);
    // its last is followed by the next block's first panel of its first one.
    const WeightBlock after = item + 1 == i1 ? block_after(q, i0 / BLOCKS) : WeightBlock{};
    run(slice_of(b, item / BLOCKS), item == i0, after.nc > 0 ? &after : nullptr, io, oo, np);
  }
}

// packing: before(block) packs it (orders 0 and 2), so each block waits for its packing;
// else one parallel region walks every block, each thread its share of each (a region per
// block cost ResNet-50's 7x7 convs a wake-up of their threads eight times a call).
template <class Before, class Run>
inline void for_blocks(bool packing, Before before, Run run) {
  if constexpr (ORDER == 1) {
    PARALLEL_FOR
    for (long item = 0; item < BLOCKS * SLICES; ++item) {
      long io[BH * BW], oo[BH * BW];
      const long np = pixel_block(item % BLOCKS, io, oo);
      for (long q = 0; q < WBLOCKS; ++q) {
        const WeightBlock after = block_after(q, item / BLOCKS);
        run(slice_of(weight_block(q), item / BLOCKS), true, after.nc > 0 ? &after : nullptr, io, oo, np);
      }
    }
  } else if (!packing) {
    PARALLEL_FOR
    for (long t = 0; t < THREADS; ++t)
      for (long q = 0; q < WBLOCKS; ++q) run_share(t, q, run);
  } else {
    for (long q = 0; q < WBLOCKS; ++q) {
      before(weight_block(q));
      PARALLEL_FOR
      for (long t = 0; t < THREADS; ++t) run_share(t, q, run);
    }
  }
}
)";

}  // namespace

std::string conv_shape_text(const Workload& w, const Schedule& s, const MachineInfo& m, long cols) {
  auto knob = [&](std::string_view k) { return long(s.at(std::string(k))); };
  std::ostringstream o;
  o << kernel_preamble(w, s, int(knob(knobs::threads))) << "constexpr long N = " << w.dim("N") << ", H = " << w.dim("H")
    << ", W = " << w.dim("W") << ", C = " << w.dim("C") << ", R = " << w.dim("R") << ", S = " << w.dim("S") << ";\n"
    << "constexpr long STRIDE = " << w.dim("stride") << ", PAD = " << w.dim("pad") << ", OH = " << w.out_h()
    << ", OW = " << w.out_w() << ";\n"
    << "constexpr long ROWS = OH * OW, COLS = " << cols << ";\n";
  if (w.op() == "conv2d") o << "constexpr long K = " << w.dim("K") << ", LDB = K;\n";
  o << "constexpr long VL = " << m.lanes() << ", MR = " << knob(knobs::micro_m) << ", NR = " << knob(knobs::micro_n)
    << ", NV = NR / VL;\n"
    << "constexpr long TH = " << knob(knobs::tile_h) << ", TW = " << knob(knobs::tile_w) << ";\n";
  return o.str();
}

const char* conv_common_text() { return kCommon; }

std::string generate_conv_source(const Workload& w, const Schedule& s, const MachineInfo& m) {
  if (w.op() == "depthwise_conv2d") return generate_depthwise_source(w, s, m);
  auto knob = [&](std::string_view k) { return long(s.at(std::string(k))); };
  const bool lowp = w.dtype() != DType::float32;
  const long nr = knob(knobs::micro_n);
  const lowering::FusionSplit split = lowering::split_epilogue(w.op(), w.epilogue(), int(knob(knobs::fusion_level)));
  const long depth = knob(knobs::async_copy_depth);

  std::ostringstream o;
  const int threads = int(knob(knobs::threads));
  o << (lowp ? "#include <immintrin.h>\n" : "") << conv_shape_text(w, s, m, w.dim("K"));
  o << "constexpr long SLICES = "
    << conv_slices(w.out_h(), w.out_w(), knob(knobs::tile_h), knob(knobs::tile_w), knob(knobs::threads),
                   conv_panels(w, s))
    << ";\n"
    << cut_text();
  if (lowp) {
    // async_copy_depth: 1 packed, 2 packed and prefetched (int8 and bf16 always pack).
    o << "constexpr long NC = " << whole_blocks(knob(knobs::tile_n), nr) << ", CB = " << knob(knobs::tile_k) << ";\n"
      << "constexpr long PF = " << (depth >= 2 ? 8 : 0) << ";\n";
  } else {
    // async_copy_depth: 1 weights in place, 2 packed, 3 packed and prefetched.
    o << "constexpr long NC = " << whole_blocks(knob(knobs::tile_n), nr) << ", CB = " << knob(knobs::tile_k)
      << ", CBLK = CB;\n"
      << "constexpr bool INPLACE = " << (depth == 1 ? "true" : "false") << ";\n"
      << "constexpr long PF = " << (depth >= 3 ? 8 : 0) << ";\n";
  }
  o << "constexpr int ORDER = " << knob(knobs::tile_order) << ";\n";
  if (lowp) {
    o << low_precision_types(w.dtype()) << "using TIN = TA;\nconstexpr long CP = (C + KG - 1) / KG * KG;\n"
      << "constexpr bool REFILL = true, ZERO_BORDER = !INT8;\n";
  } else {
    o << float_input_text();
  }
  o << vector_helpers() << (lowp ? "" : b_row_text()) << epilogue_functions(split) << separate_pass_function();
  std::string kernel = std::string(kCommon);
  if (lowp)
    kernel += std::string(low_precision_helpers()) + conv_lowp_text() + kWeightBlocks + conv_lowp_image_text();
  else
    kernel += std::string(kConv) + kWeightBlocks + kConvImage;
  replace_all(kernel, "UNROLL", std::to_string(knob(knobs::k_steps)));
  o << kernel << "}  // namespace\n\n" << threads_symbol_text(threads);
  o << (lowp ? pack_weights_text("TB", "qb", "PACKED * sizeof(TB)", "")
             : pack_weights_text("float", "b", "INPLACE ? 0 : FULL * 4", ", false"));
  o << "extern \"C\" void atvoss_kernel(const AtvossArgs* g) {\n";
  if (lowp) {
    // Scratch counts 4-byte words.
    o << "  static thread_local Scratch wp((PACKED * sizeof(TB) + 3) / 4), "
         "pad(PAD > 0 || CP > C ? (HP * WP * CP * sizeof(TA) + 3) / 4 : 0);\n"
      << "  const TA* qa = static_cast<const TA*>(g->qa);\n"
      << "  const TB* qb = static_cast<const TB*>(g->qb);\n"
      << "  TB* packed = g->qb_packed ? (TB*)g->qb_packed : (TB*)wp.p;\n"
      << "  const TA fill = INT8 ? TA(g->qzero) : TA(0);\n"
      << "  for (long n = 0; n < N; ++n) {\n"
      << "    const TA* in = padded(qa + n * H * W * C, (TA*)pad.p, fill);\n";
  } else {
    o << "  static thread_local Scratch wp(INPLACE ? 0 : PACKED), pad(PAD > 0 ? HP * WP * C : 0);\n"
      << "  const bool prepacked = !INPLACE && g->qb_packed;\n"
      << "  float* packed = prepacked ? (float*)g->qb_packed : wp.p;\n"
      << "  for (long n = 0; n < N; ++n) {\n"
      << "    const float* in = padded(g->a + n * H * W * C, pad.p, 0.0f);\n";
  }
  o << image_pointers_text();
  o << (lowp ? "    conv_image(in, qb, packed, out, res, n == 0 && !g->qb_packed, *g, INT8 ? g->qcomp : nullptr);\n"
             : "    conv_image(in, g->b, packed, out, res, n == 0 && !prepacked, prepacked, *g);\n");
  o << separate_pass_calls(w, split, "out", "ldc_of(*g)") << "  }\n}\n";
  return o.str();
}

const char* float_input_text() {
  return "using TIN = float;\nconstexpr long CP = C;\nconstexpr bool REFILL = false, ZERO_BORDER = true;\n";
}

const char* image_pointers_text() {
  return "    float* out = g->c + n * ROWS * ldc_of(*g);\n"
         "    const float* res = g->residual ? g->residual + n * ROWS * COLS : nullptr;\n";
}

}  // namespace atvoss::host
