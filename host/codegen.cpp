#include "host/codegen.hpp"

#include <algorithm>
#include <sstream>

#include "host/codegen_conv.hpp"
#include "host/codegen_lowp.hpp"
#include "host/codegen_rowops.hpp"
#include "host/operands.hpp"
#include "host/rowops_space.hpp"
#include "host/vector_code.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

// Packing, micro-kernel, macro-kernel and the cache-blocked loops; constants come first.
constexpr const char* kKernel = R"(
void pack_a(const float* A, long i0, long mc, long p0, long kc, float* ap) {
  for (long ib = 0; ib < mc; ib += MR) {
    float* dst = ap + ib * kc;
    const long rows = mc - ib < MR ? mc - ib : MR;
    for (long k = 0; k < kc; ++k) {
      for (long r = 0; r < MR; ++r) dst[k * MR + r] = r < rows ? A[(i0 + ib + r) * K + p0 + k] : 0.0f;
    }
  }
}

// Rows k0 .. k0 + KB of every micro_n-wide panel of the kc x nc block of B at (p0, j0). A few
// rows at a time, each read front to back: the hardware prefetcher follows such rows, while
// packing one panel at a time walks B down a column at a stride of N and packed 6 % slower on
// the BERT shapes (docs/host-backend.md).
constexpr long KB = 8;
void pack_b_rows(const float* B, long j0, long nc, long p0, long k0, long kc, float* bp) {
  const long k1 = kc - k0 < KB ? kc : k0 + KB;
  for (long jb = 0; jb < nc; jb += NR) {
    const long cols = nc - jb < NR ? nc - jb : NR;
    float* dst = bp + jb * kc;
    for (long k = k0; k < k1; ++k) {
      const float* src = B + (p0 + k) * N + j0 + jb;
      if (cols == NR) {
        std::memcpy(dst + k * NR, src, NR * 4);
      } else {
        for (long c = 0; c < NR; ++c) dst[k * NR + c] = c < cols ? src[c] : 0.0f;
      }
    }
  }
}

inline void micro(long kc, const float* __restrict a, const float* __restrict b, float* c,
                  long mr, long nr, bool first, bool last, const AtvossArgs& g,
                  const float* res, long row0, long col0) {
  vf acc[MR][NV];
#pragma GCC unroll 16
  for (long r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) acc[r][v] = vf{};
  if constexpr (PF > 0) {
    for (long r = 0; r < mr; ++r) __builtin_prefetch(c + r * N, 1);
  }
#pragma GCC unroll UNROLL
  for (long k = 0; k < kc; ++k) {
    if constexpr (PF > 0) {
      __builtin_prefetch(a + (k + PF) * MR);
      __builtin_prefetch(b + (k + PF) * NR);
    }
    vf bv[NV];
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) bv[v] = *(const vf*)(b + k * NR + v * VL);
#pragma GCC unroll 16
    for (long r = 0; r < MR; ++r) {
      const float av = a[k * MR + r];
#pragma GCC unroll 8
      for (long v = 0; v < NV; ++v) acc[r][v] += av * bv[v];
    }
  }
  if (mr == MR && nr == NR) {
#pragma GCC unroll 16
    for (long r = 0; r < MR; ++r) {
      const float* res_row = res ? res + (row0 + r) * N : nullptr;
#pragma GCC unroll 8
      for (long v = 0; v < NV; ++v) {
        float* p = c + r * N + v * VL;
        vf x = acc[r][v];
        if (!first) x += loadu(p);
        if (last) x = fused<true>(x, g, res_row, col0 + v * VL, VL);
        storeu(p, x);
      }
    }
    return;
  }
  vf tmp[MR][NV];
#pragma GCC unroll 16
  for (long r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) tmp[r][v] = acc[r][v];
  for (long r = 0; r < mr; ++r) {
    const float* res_row = res ? res + (row0 + r) * N : nullptr;
    for (long v = 0; v * VL < nr; ++v) {
      const long n = nr - v * VL < VL ? nr - v * VL : VL;
      float* p = c + r * N + v * VL;
      vf x = tmp[r][v];
      if (!first) x += load_n(p, n);
      if (last) x = fused<false>(x, g, res_row, col0 + v * VL, n);
      store_n(p, x, n);
    }
  }
}

void macro(long mc, long nc, long kc, const float* ap, const float* bp, float* C, long i0,
           long j0, bool first, bool last, const AtvossArgs& g, const float* res) {
  auto tile = [&](long ir, long jr) {
    const long mr = mc - ir < MR ? mc - ir : MR, nr = nc - jr < NR ? nc - jr : NR;
    micro(kc, ap + ir * kc, bp + jr * kc, C + (i0 + ir) * N + j0 + jr, mr, nr, first, last, g,
          res, i0 + ir, j0 + jr);
  };
  if constexpr (ORDER == 2) {
    for (long ir = 0; ir < mc; ir += MR)
      for (long jr = 0; jr < nc; jr += NR) tile(ir, jr);
  } else {
    for (long jr = 0; jr < nc; jr += NR)
      for (long ir = 0; ir < mc; ir += MR) tile(ir, jr);
  }
}

// threads: order 1 splits the mc blocks among the threads, each packing its own A block and
// B panels; orders 0 and 2 pack each B block once (its rows split among the threads), then
// split the mc blocks, and where there are fewer than two per thread (a small M) also each
// block's micro-panels into THREADS column slices, slice by slice, so that every thread gets
// its share. Each thread packs A into its own buffer (the same block once per slice).
void gemm(const float* A, const float* B, float* C, const AtvossArgs& g, const float* res,
          float* ap_all, float* bp_all) {
  if constexpr (ORDER == 1) {
    PARALLEL_FOR
    for (long ic = 0; ic < M; ic += MC) {
      float* ap = ap_all + THREAD_ID * AP_FLOATS;
      float* bp = bp_all + THREAD_ID * BP_FLOATS;
      const long mc = M - ic < MC ? M - ic : MC;
      for (long pc = 0; pc < K; pc += KC) {
        const long kc = K - pc < KC ? K - pc : KC;
        pack_a(A, ic, mc, pc, kc, ap);
        for (long jc = 0; jc < N; jc += NC) {
          const long nc = N - jc < NC ? N - jc : NC;
          for (long k0 = 0; k0 < kc; k0 += KB) pack_b_rows(B, jc, nc, pc, k0, kc, bp);
          macro(mc, nc, kc, ap, bp, C, ic, jc, pc == 0, pc + kc >= K, g, res);
        }
      }
    }
  } else {
    for (long jc = 0; jc < N; jc += NC) {
      const long nc = N - jc < NC ? N - jc : NC;
      for (long pc = 0; pc < K; pc += KC) {
        const long kc = K - pc < KC ? K - pc : KC;
        PARALLEL_FOR
        for (long k0 = 0; k0 < kc; k0 += KB) pack_b_rows(B, jc, nc, pc, k0, kc, bp_all);
        const long panels = (nc + NR - 1) / NR;
        PARALLEL_FOR
        for (long item = 0; item < MBLOCKS * SLICES; ++item) {
          const long ic = item % MBLOCKS * MC, p0 = item / MBLOCKS * panels / SLICES;
          const long p1 = (item / MBLOCKS + 1) * panels / SLICES;
          if (p0 == p1) continue;
          float* ap = ap_all + THREAD_ID * AP_FLOATS;
          const long mc = M - ic < MC ? M - ic : MC, j0 = p0 * NR;
          pack_a(A, ic, mc, pc, kc, ap);
          macro(mc, (p1 * NR < nc ? p1 * NR : nc) - j0, kc, ap, bp_all + j0 * kc, C, ic, jc + j0, pc == 0,
                pc + kc >= K, g, res);
        }
      }
    }
  }
}

)";

}  // namespace

long whole_blocks(long v, long step) { return std::max(step, v / step * step); }

std::string matmul_constants(const Workload& w, const Schedule& s, const MachineInfo& m, long kc) {
  const MatmulShape shape = matmul_shape(w);
  auto knob = [&](std::string_view k) { return long(s.at(std::string(k))); };
  const long mr = knob(knobs::micro_m), nr = knob(knobs::micro_n);
  std::ostringstream o;
  o << "constexpr long BATCH = " << shape.batch << ", M = " << shape.m << ", N = " << shape.n << ", K = " << shape.k
    << ";\n"
    << "constexpr long VL = " << m.lanes() << ", MR = " << mr << ", NR = " << nr << ", NV = NR / VL;\n"
    << "constexpr long MC = " << whole_blocks(knob(knobs::tile_m), mr)
    << ", NC = " << whole_blocks(knob(knobs::tile_n), nr) << ", KC = " << kc << ";\n"
    << "constexpr long PF = " << 8 * (knob(knobs::async_copy_depth) - 1) << ";\n"
    << "constexpr int ORDER = " << knob(knobs::tile_order)
    << ";\n"
    // Column slices per mc block (gemm): THREADS where the mc blocks are fewer than two a thread.
    << "constexpr long MBLOCKS = (M + MC - 1) / MC, SLICES = MBLOCKS >= 2 * THREADS ? 1 : THREADS;\n";
  return o.str();
}

std::string generate_source(const Workload& w, const Schedule& s, const MachineInfo& m) {
  if (w.is_conv()) return generate_conv_source(w, s, m);
  if (is_row_op(w)) return generate_rowops_source(w, s, m);
  if (w.dtype() != DType::float32) return generate_low_precision_source(w, s, m);
  auto knob = [&](std::string_view k) { return long(s.at(std::string(k))); };
  const lowering::FusionSplit split = lowering::split_epilogue(w.op(), w.epilogue(), int(knob(knobs::fusion_level)));
  const int threads = int(knob(knobs::threads));

  std::ostringstream o;
  o << kernel_preamble(w, s, threads) << matmul_constants(w, s, m, knob(knobs::tile_k))
    << "constexpr long AP_FLOATS = ((MC + MR) * KC + 15) / 16 * 16, BP_FLOATS = ((NC + NR) * KC + 15) / 16 * 16;\n"
    << "constexpr long ROWS = M, COLS = N;\n"
    << vector_helpers() << epilogue_functions(split) << separate_pass_function()
    << with_unroll(kKernel, knob(knobs::k_steps)) << "}  // namespace\n\n"
    << threads_symbol_text(threads) << "extern \"C\" void atvoss_kernel(const AtvossArgs* g) {\n"
    << "  static thread_local Scratch ap(" << threads << " * AP_FLOATS), bp(" << threads << " * BP_FLOATS);\n"
    << "  for (long b = 0; b < BATCH; ++b) {\n"
    << "    const float* res = g->residual ? g->residual + b * M * N : nullptr;\n"
    << "    float* C = g->c + b * M * N;\n"
    << "    gemm(g->a + b * M * K, g->b + b * K * N, C, *g, res, ap.p, bp.p);\n";
  o << separate_pass_calls(split, "C") << "  }\n}\n";
  return o.str();
}

}  // namespace atvoss::host
