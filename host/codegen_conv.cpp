#include "host/codegen_conv.hpp"

#include <algorithm>
#include <sstream>

#include "host/codegen.hpp"
#include "host/vector_code.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

// Buffers, the zero-bordered input copy and one separate pass per unfused epilogue op over
// the ROWS x COLS output of one image.
constexpr const char* kCommon = R"(
constexpr long HP = H + 2 * PAD, WP = W + 2 * PAD;
constexpr long BH = TH < OH ? TH : OH, BW = TW < OW ? TW : OW;
constexpr long ROWS = OH * OW;

float* alloc_floats(long n) {
  const long bytes = (n * 4 + 63) / 64 * 64;
  float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  std::memset(p, 0, bytes);
  return p;
}

// One image into the interior of the padded buffer (its border stays zero).
const float* padded(const float* img, float* buf) {
  if constexpr (PAD == 0) return img;
  for (long h = 0; h < H; ++h) std::memcpy(buf + ((h + PAD) * WP + PAD) * C, img + h * W * C, W * C * 4);
  return buf;
}

// The pixels of the output block at (oh0, ow0): input offsets (padded image) and output rows.
long pixel_block(long oh0, long ow0, long* io, long* oo) {
  const long bh = OH - oh0 < TH ? OH - oh0 : TH, bw = OW - ow0 < TW ? OW - ow0 : TW;
  long p = 0;
  for (long y = 0; y < bh; ++y) {
    for (long x = 0; x < bw; ++x, ++p) {
      io[p] = ((oh0 + y) * STRIDE * WP + (ow0 + x) * STRIDE) * C;
      oo[p] = (oh0 + y) * OW + ow0 + x;
    }
  }
  return p;
}

template <typename F>
void separate_pass(float* out, const AtvossArgs& g, const float* res, F full, F part) {
  for (long i = 0; i < ROWS; ++i) {
    float* row = out + i * COLS;
    const float* res_row = res ? res + i * COLS : nullptr;
    long j = 0;
    for (; j + VL <= COLS; j += VL) storeu(row + j, full(loadu(row + j), g, res_row, j, VL));
    if (j < COLS) store_n(row + j, part(load_n(row + j, COLS - j), g, res_row, j, COLS - j), COLS - j);
  }
}
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
constexpr long PACKED = RING ? R * S * CB * NCP : NP * PANEL;  // floats of the packed buffer

// The packed panel of columns [j0 + jr, j0 + jr + NR) in the block of channels [c0, c0 + kc).
inline float* panel(float* wp, long j0, long jr, long c0, long kc) {
  if constexpr (RING) return wp + jr / NR * (R * S * kc * NR);
  return wp + (j0 + jr) / NR * PANEL + c0 * R * S * NR;
}
constexpr long BSTRIDE = INPLACE ? K : NR;  // floats from one weight row to the next

// Packed weights: panels of NR output channels, each [r][s][c][NR] over a block's channels
// (zero past K); where they sit is panel()'s. One block (output channels [j0, j0 + nc),
// channels [c0, c0 + kc)) is packed right before its first use, reading each HWIO row of nc
// weights once, front to back, and scattering it over the panels.
void pack_block(const float* w, float* wp, long j0, long nc, long c0, long kc) {
  for (long rs = 0; rs < R * S; ++rs) {
    for (long c = 0; c < kc; ++c) {
      const float* src = w + (rs * C + c0 + c) * K + j0;
      const long at = (rs * kc + c) * NR;
      long j = 0;
      for (; j + NR <= nc; j += NR) std::memcpy(panel(wp, j0, j, c0, kc) + at, src + j, NR * 4);
      if (j < nc) {
        float* dst = panel(wp, j0, j, c0, kc) + at;
        for (long x = 0; x < NR; ++x) dst[x] = j + x < nc ? src[j + x] : 0.0f;
      }
    }
  }
}

// MR pixels (input pointers ap, output rows cp, residual rows rp) x NR channels from col0,
// reduced over R x S x kc channels of the weights b (packed, or HWIO in place: INPLACE);
// mr/nr of them valid; FULLN: nr == NR (in place, a partial panel loads only nr columns).
template <bool FULLN>
inline void micro(long kc, const float* const* ap, const float* __restrict b, float* const* cp,
                  const float* const* rp, long mr, long nr, bool first, bool last, const AtvossArgs& g,
                  long col0) {
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
  for (long r = 0; r < R; ++r) {
    for (long s = 0; s < S; ++s) {
      const long off = (r * WP + s) * C;
      const float* bb = b + (r * S + s) * (INPLACE ? C * K : kc * NR);
      const float* a[MR];
#pragma GCC unroll 16
      for (long i = 0; i < MR; ++i) a[i] = ap[i] + off;
#pragma GCC unroll UNROLL
      for (long c = 0; c < kc; ++c) {
        if constexpr (PF > 0) __builtin_prefetch(bb + (c + PF) * BSTRIDE);
        vf bv[NV];
#pragma GCC unroll 8
        for (long v = 0; v < NV; ++v) {
          if constexpr (!INPLACE) bv[v] = *(const vf*)(bb + c * NR + v * VL);
          else if constexpr (FULLN) bv[v] = loadu(bb + c * K + v * VL);
          else bv[v] = load_n(bb + c * K + v * VL, cnt[v]);
        }
#pragma GCC unroll 16
        for (long i = 0; i < MR; ++i) {
          const float av = a[i][c];
#pragma GCC unroll 8
          for (long v = 0; v < NV; ++v) acc[i][v] += av * bv[v];
        }
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
        if (last) x = fused<true>(x, g, rp[i], col0 + v * VL, VL);
        storeu(p, x);
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
      if (last) x = fused<false>(x, g, rp[i], col0 + v * VL, n);
      store_n(p, x, n);
    }
  }
}

// One pixel block (np pixels) x output channels [j0, j0 + nc) x input channels [c0, c0 + kc).
void block(const float* in, const float* w, float* wp, float* out, const float* res, const long* io,
           const long* oo, long np, long j0, long nc, long c0, long kc, const AtvossArgs& g) {
  const bool first = c0 == 0, last = c0 + kc >= C;
  auto tile = [&](long ir, long jr) {
    const long mr = np - ir < MR ? np - ir : MR, nr = nc - jr < NR ? nc - jr : NR;
    const float* a[MR];
    float* cp[MR];
    const float* rp[MR];
#pragma GCC unroll 16
    for (long i = 0; i < MR; ++i) {
      const long p = ir + (i < mr ? i : mr - 1);  // past the block: repeat the last pixel
      a[i] = in + io[p] + c0;
      cp[i] = out + oo[p] * K + j0 + jr;
      rp[i] = res ? res + oo[p] * K : nullptr;
    }
    const float* b = INPLACE ? w + c0 * K + j0 + jr : panel(wp, j0, jr, c0, kc);
    if (INPLACE && nr < NR) micro<false>(kc, a, b, cp, rp, mr, nr, first, last, g, j0 + jr);
    else micro<true>(kc, a, b, cp, rp, mr, nr, first, last, g, j0 + jr);
  };
  if constexpr (ORDER == 2) {
    for (long ir = 0; ir < np; ir += MR)
      for (long jr = 0; jr < nc; jr += NR) tile(ir, jr);
  } else {
    for (long jr = 0; jr < nc; jr += NR)
      for (long ir = 0; ir < np; ir += MR) tile(ir, jr);
  }
}

// pack: this image packs the weights (the first one), each block before its first use.
void conv_image(const float* in, const float* w, float* wp, float* out, const float* res, bool pack,
                const AtvossArgs& g) {
  long io[BH * BW], oo[BH * BW];
  if constexpr (ORDER == 1) {
    for (long oh0 = 0; oh0 < OH; oh0 += TH)
      for (long ow0 = 0; ow0 < OW; ow0 += TW) {
        const long np = pixel_block(oh0, ow0, io, oo);
        for (long jc = 0; jc < K; jc += NC)
          for (long c0 = 0; c0 < C; c0 += CB) {
            const long nc = K - jc < NC ? K - jc : NC, kc = C - c0 < CB ? C - c0 : CB;
            if (!INPLACE && pack && oh0 == 0 && ow0 == 0) pack_block(w, wp, jc, nc, c0, kc);
            block(in, w, wp, out, res, io, oo, np, jc, nc, c0, kc, g);
          }
      }
  } else {
    for (long jc = 0; jc < K; jc += NC)
      for (long c0 = 0; c0 < C; c0 += CB) {
        const long nc = K - jc < NC ? K - jc : NC, kc = C - c0 < CB ? C - c0 : CB;
        if (!INPLACE && (pack || RING)) pack_block(w, wp, jc, nc, c0, kc);
        for (long oh0 = 0; oh0 < OH; oh0 += TH)
          for (long ow0 = 0; ow0 < OW; ow0 += TW) {
            const long np = pixel_block(oh0, ow0, io, oo);
            block(in, w, wp, out, res, io, oo, np, jc, nc, c0, kc, g);
          }
      }
  }
}
)";

// depthwise_conv2d: vectors over channels, MR pixels x NR channels per register block.
constexpr const char* kDepthwise = R"(
template <bool FULL>
inline void micro(const float* const* ap, const float* wgt, float* const* cp, const float* const* rp,
                  long mr, long nr, const AtvossArgs& g, long col0) {
  long cnt[NV];
#pragma GCC unroll 8
  for (long v = 0; v < NV; ++v) cnt[v] = nr - v * VL < 0 ? 0 : (nr - v * VL < VL ? nr - v * VL : VL);
  auto L = [&](const float* p, long v) { if constexpr (FULL) return loadu(p); else return load_n(p, cnt[v]); };
  vf acc[MR][NV];
#pragma GCC unroll 16
  for (long i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) acc[i][v] = vf{};
  if constexpr (PF > 0) {
    for (long i = 0; i < mr; ++i) __builtin_prefetch(cp[i], 1);
  }
#pragma GCC unroll UNROLL
  for (long r = 0; r < R; ++r) {
    if constexpr (PF > 0) {
      for (long i = 0; i < MR; ++i) __builtin_prefetch(ap[i] + (r + 1) * WP * C);
    }
#pragma GCC unroll UNROLL
    for (long s = 0; s < S; ++s) {
      const long off = (r * WP + s) * C;
      const float* wr = wgt + (r * S + s) * C;
      vf wv[NV];
#pragma GCC unroll 8
      for (long v = 0; v < NV; ++v) wv[v] = L(wr + v * VL, v);
#pragma GCC unroll 16
      for (long i = 0; i < MR; ++i)
#pragma GCC unroll 8
        for (long v = 0; v < NV; ++v) acc[i][v] += L(ap[i] + off + v * VL, v) * wv[v];
    }
  }
  for (long i = 0; i < (FULL ? MR : mr); ++i) {
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) {
      if constexpr (FULL) {
        storeu(cp[i] + v * VL, fused<true>(acc[i][v], g, rp[i], col0 + v * VL, VL));
      } else if (cnt[v] > 0) {
        store_n(cp[i] + v * VL, fused<false>(acc[i][v], g, rp[i], col0 + v * VL, cnt[v]), cnt[v]);
      }
    }
  }
}

// One pixel block (np pixels) x channels [c0, c0 + nc).
void block(const float* in, const float* wgt, float* out, const float* res, const long* io,
           const long* oo, long np, long c0, long nc, const AtvossArgs& g) {
  auto tile = [&](long ir, long jr) {
    const long mr = np - ir < MR ? np - ir : MR, nr = nc - jr < NR ? nc - jr : NR;
    const float* a[MR];
    float* cp[MR];
    const float* rp[MR];
#pragma GCC unroll 16
    for (long i = 0; i < MR; ++i) {
      const long p = ir + (i < mr ? i : mr - 1);  // past the block: repeat the last pixel
      a[i] = in + io[p] + c0 + jr;
      cp[i] = out + oo[p] * C + c0 + jr;
      rp[i] = res ? res + oo[p] * C : nullptr;
    }
    if (mr == MR && nr == NR) micro<true>(a, wgt + c0 + jr, cp, rp, mr, nr, g, c0 + jr);
    else micro<false>(a, wgt + c0 + jr, cp, rp, mr, nr, g, c0 + jr);
  };
  if constexpr (ORDER == 2) {
    for (long jr = 0; jr < nc; jr += NR)
      for (long ir = 0; ir < np; ir += MR) tile(ir, jr);
  } else {
    for (long ir = 0; ir < np; ir += MR)
      for (long jr = 0; jr < nc; jr += NR) tile(ir, jr);
  }
}

void conv_image(const float* in, const float* wgt, float*, float* out, const float* res, bool, const AtvossArgs& g) {
  long io[BH * BW], oo[BH * BW];
  if constexpr (ORDER == 1) {
    for (long oh0 = 0; oh0 < OH; oh0 += TH)
      for (long ow0 = 0; ow0 < OW; ow0 += TW) {
        const long np = pixel_block(oh0, ow0, io, oo);
        for (long c0 = 0; c0 < C; c0 += TC) block(in, wgt, out, res, io, oo, np, c0, C - c0 < TC ? C - c0 : TC, g);
      }
  } else {
    for (long c0 = 0; c0 < C; c0 += TC)
      for (long oh0 = 0; oh0 < OH; oh0 += TH)
        for (long ow0 = 0; ow0 < OW; ow0 += TW) {
          const long np = pixel_block(oh0, ow0, io, oo);
          block(in, wgt, out, res, io, oo, np, c0, C - c0 < TC ? C - c0 : TC, g);
        }
  }
}
)";

long round_to(long v, long step) { return std::max(step, v / step * step); }

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

}  // namespace

std::string generate_conv_source(const Workload& w, const Schedule& s, const MachineInfo& m) {
  auto knob = [&](std::string_view k) { return long(s.at(std::string(k))); };
  const bool dw = w.op() == "depthwise_conv2d";
  const long mr = knob(knobs::micro_m), nr = knob(knobs::micro_n);
  const lowering::FusionSplit split = lowering::split_epilogue(w.op(), w.epilogue(), int(knob(knobs::fusion_level)));
  const long depth = knob(knobs::async_copy_depth);
  const long cols = dw ? w.dim("C") : w.dim("K");

  std::ostringstream o;
  o << kernel_preamble(w, s, 1)  // conv kernels run on one thread: the space has no threads knob
    << "constexpr long N = " << w.dim("N") << ", H = " << w.dim("H") << ", W = " << w.dim("W")
    << ", C = " << w.dim("C") << ", R = " << w.dim("R") << ", S = " << w.dim("S") << ";\n"
    << "constexpr long STRIDE = " << w.dim("stride") << ", PAD = " << w.dim("pad") << ", OH = " << w.out_h()
    << ", OW = " << w.out_w() << ", COLS = " << cols << ";\n";
  if (!dw) o << "constexpr long K = " << w.dim("K") << ";\n";
  o << "constexpr long VL = " << m.lanes() << ", MR = " << mr << ", NR = " << nr << ", NV = NR / VL;\n"
    << "constexpr long TH = " << knob(knobs::tile_h) << ", TW = " << knob(knobs::tile_w) << ";\n";
  if (dw) {
    o << "constexpr long TC = " << round_to(knob(knobs::tile_c), nr) << ";\n"
      << "constexpr long PF = " << depth - 1 << ";\n";
  } else {
    // async_copy_depth: 1 weights in place, 2 packed, 3 packed and prefetched.
    o << "constexpr long NC = " << round_to(knob(knobs::tile_n), nr) << ", CB = " << knob(knobs::tile_k) << ";\n"
      << "constexpr bool INPLACE = " << (depth == 1 ? "true" : "false") << ";\n"
      << "constexpr long PF = " << (depth >= 3 ? 8 : 0) << ";\n";
  }
  o << "constexpr int ORDER = " << knob(knobs::tile_order) << ";\n"
    << vector_helpers() << epilogue_functions(split);
  std::string kernel = std::string(kCommon) + (dw ? kDepthwise : kConv);
  replace_all(kernel, "UNROLL", std::to_string(knob(knobs::k_steps)));
  o << kernel << "}  // namespace\n\n"
    << "extern \"C\" void atvoss_kernel(const AtvossArgs* g) {\n";
  if (dw) {
    o << "  float* wp = nullptr;\n";
  } else {
    o << "  static float* wp = INPLACE ? nullptr : alloc_floats(PACKED);\n";
  }
  o << "  static float* pad = PAD > 0 ? alloc_floats(HP * WP * C) : nullptr;\n"
    << "  for (long n = 0; n < N; ++n) {\n"
    << "    const float* in = padded(g->a + n * H * W * C, pad);\n"
    << "    float* out = g->c + n * ROWS * COLS;\n"
    << "    const float* res = g->residual ? g->residual + n * ROWS * COLS : nullptr;\n"
    << "    conv_image(in, g->b, wp, out, res, n == 0, *g);\n";
  o << separate_pass_calls(split, "out") << "  }\n}\n";
  return o.str();
}

}  // namespace atvoss::host
