// The depthwise_conv2d generator (codegen_conv.hpp): vectors over channels, micro_m pixels of
// one output row x micro_n channels per register block, read straight from the unpadded image.
#include <sstream>

#include "host/codegen.hpp"
#include "host/internal/conv_codegen.hpp"
#include "host/vector_code.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

// depthwise_conv2d: vectors over channels, MR pixels of one output row x NR channels per
// register block, read straight from the unpadded image. A tap in the zero border adds nothing,
// so it is skipped: EDGE tiles (a tap in the border, or fewer than MR pixels) test each window
// row and tap; the others, nearly all, run without a branch. A padded copy of the input cost a third of the
// kernel's time (docs/decisions/host-depthwise-rows.md). An interior tile's loads are fixed
// offsets from one pointer, so with stride 1 the compiler loads each of a window row's
// MR + S - 1 input columns once for every pixel that reads it.
constexpr const char* kDepthwise = R"(
template <bool FULL, bool EDGE>
inline void micro(const float* img, const float* wgt, float* out, const float* res, long oh, long ow0, long mr,
                  long nr, const AtvossArgs& g, long c0) {
  long cnt[NV];
#pragma GCC unroll 8
  for (long v = 0; v < NV; ++v) cnt[v] = nr - v * VL < 0 ? 0 : (nr - v * VL < VL ? nr - v * VL : VL);
  auto L = [&](const float* p, long v) { if constexpr (FULL) return loadu(p); else return load_n(p, cnt[v]); };
  vf acc[MR][NV];
#pragma GCC unroll 16
  for (long i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) acc[i][v] = vf{};
  const long y0 = oh * STRIDE - PAD, x0 = ow0 * STRIDE - PAD;
  float* cp = out + (oh * OW + ow0) * C + c0;
  if constexpr (PF > 0) {
    for (long i = 0; i < mr; ++i) __builtin_prefetch(cp + i * C, 1);
  }
#pragma GCC unroll UNROLL
  for (long r = 0; r < R; ++r) {
    const long y = y0 + r;
    if constexpr (EDGE) {
      if (y < 0 || y >= H) continue;
    }
    const float* row = img + y * W * C + c0;
    if constexpr (PF > 0) {
      if (y + 1 < H)
        for (long i = 0; i < MR; ++i) __builtin_prefetch(row + W * C + (x0 + i * STRIDE > 0 ? x0 + i * STRIDE : 0) * C);
    }
#pragma GCC unroll UNROLL
    for (long s = 0; s < S; ++s) {
      const float* wr = wgt + (r * S + s) * C + c0;
      vf wv[NV];
#pragma GCC unroll 8
      for (long v = 0; v < NV; ++v) wv[v] = L(wr + v * VL, v);
#pragma GCC unroll 16
      for (long i = 0; i < MR; ++i) {
        const long x = x0 + i * STRIDE + s;
        if constexpr (EDGE) {
          if (i >= mr || x < 0 || x >= W) continue;
        }
#pragma GCC unroll 8
        for (long v = 0; v < NV; ++v) acc[i][v] += L(row + x * C + v * VL, v) * wv[v];
      }
    }
  }
  for (long i = 0; i < (EDGE ? mr : MR); ++i) {
    const float* rp = res ? res + (oh * OW + ow0 + i) * C : nullptr;
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) {
      if constexpr (FULL) {
        store_out(g, cp + i * C + v * VL, fused<true>(acc[i][v], g, rp, c0 + v * VL, VL), VL);
      } else if (cnt[v] > 0) {
        store_out(g, cp + i * C + v * VL, fused<false>(acc[i][v], g, rp, c0 + v * VL, cnt[v]), cnt[v]);
      }
    }
  }
}

// The register block at row oh, columns [ow, ow + MR) of a block whose columns end at ow_end,
// channels [c, c + nr): the interior kernel unless a tap of it falls outside the image or its
// pixels run past the block.
inline void tile(const float* img, const float* wgt, float* out, const float* res, long oh, long ow, long ow_end,
                 long c, long nr, const AtvossArgs& g) {
  const long mr = ow_end - ow < MR ? ow_end - ow : MR;
  const long first = ow * STRIDE - PAD, last = (ow + MR - 1) * STRIDE - PAD + S - 1, top = oh * STRIDE - PAD;
  const bool edge = mr < MR || first < 0 || last >= W || top < 0 || top + R > H;
  if (nr == NR) {
    if (edge) micro<true, true>(img, wgt, out, res, oh, ow, mr, nr, g, c);
    else micro<true, false>(img, wgt, out, res, oh, ow, mr, nr, g, c);
  } else {
    if (edge) micro<false, true>(img, wgt, out, res, oh, ow, mr, nr, g, c);
    else micro<false, false>(img, wgt, out, res, oh, ow, mr, nr, g, c);
  }
}

// Pixel block pb x channels [c0, c0 + nc): register blocks pixel-major (orders 0 and 1) or
// channel-major (order 2).
void block(const float* img, const float* wgt, float* out, const float* res, long pb, long c0, long nc,
           const AtvossArgs& g) {
  const long oh0 = pb / NBW * TH, ow0 = pb % NBW * TW;
  const long oh1 = OH - oh0 < TH ? OH : oh0 + TH, ow1 = OW - ow0 < TW ? OW : ow0 + TW;
  auto nr_at = [&](long c) { return c0 + nc - c < NR ? c0 + nc - c : NR; };
  if constexpr (ORDER != 2) {
    for (long oh = oh0; oh < oh1; ++oh)
      for (long ow = ow0; ow < ow1; ow += MR)
        for (long c = c0; c < c0 + nc; c += NR) tile(img, wgt, out, res, oh, ow, ow1, c, nr_at(c), g);
  } else {
    for (long c = c0; c < c0 + nc; c += NR)
      for (long oh = oh0; oh < oh1; ++oh)
        for (long ow = ow0; ow < ow1; ow += MR) tile(img, wgt, out, res, oh, ow, ow1, c, nr_at(c), g);
  }
}

// Each thread takes an even, contiguous share of the pixel blocks and walks it pixel blocks
// outer (order 1) or channel blocks outer (orders 0 and 2): every thread has a share of every
// channel block, and its rows of the image stay in its cache across them.
void conv_image(const float* img, const float* wgt, float* out, const float* res, const AtvossArgs& g) {
  PARALLEL_FOR
  for (long t = 0; t < THREADS; ++t) {
    const long pb0 = BLOCKS * t / THREADS, pb1 = BLOCKS * (t + 1) / THREADS;
    if constexpr (ORDER == 1) {
      for (long pb = pb0; pb < pb1; ++pb)
        for (long c0 = 0; c0 < C; c0 += TC) block(img, wgt, out, res, pb, c0, C - c0 < TC ? C - c0 : TC, g);
    } else {
      for (long c0 = 0; c0 < C; c0 += TC)
        for (long pb = pb0; pb < pb1; ++pb) block(img, wgt, out, res, pb, c0, C - c0 < TC ? C - c0 : TC, g);
    }
  }
}
)";

}  // namespace

std::string generate_depthwise_source(const Workload& w, const Schedule& s, const MachineInfo& m) {
  auto knob = [&](std::string_view k) { return long(s.at(std::string(k))); };
  const lowering::FusionSplit split = lowering::split_epilogue(w.op(), w.epilogue(), int(knob(knobs::fusion_level)));
  const int threads = int(knob(knobs::threads));
  std::ostringstream o;
  o << conv_shape_text(w, s, m, w.dim("C"))
    << "constexpr long TC = " << whole_blocks(knob(knobs::tile_c), knob(knobs::micro_n)) << ";\n"
    << "constexpr long PF = " << knob(knobs::async_copy_depth) - 1 << ";\n"
    << "constexpr int ORDER = " << knob(knobs::tile_order) << ";\n"
    << float_input_text() << vector_helpers() << epilogue_functions(split) << separate_pass_function();
  std::string kernel = std::string(conv_common_text()) + kDepthwise;
  replace_all(kernel, "UNROLL", std::to_string(knob(knobs::k_steps)));
  // The kernel reads its weights and image as they are: no scratch.
  o << kernel << "}  // namespace\n\n"
    << threads_symbol_text(threads) << "extern \"C\" void atvoss_kernel(const AtvossArgs* g) {\n"
    << "  for (long n = 0; n < N; ++n) {\n"
    << "    const float* in = g->a + n * H * W * C;  // unpadded: the kernel skips the border's taps\n"
    << image_pointers_text() << "    conv_image(in, g->b, out, res, *g);\n"
    << separate_pass_calls(w, split, "out") << "  }\n}\n";
  return o.str();
}

}  // namespace atvoss::host
