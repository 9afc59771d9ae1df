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

// A micro-tile's MR rows of A at its k block: packed (MR values per k step, pack_a), or read
// in place (INPLACE: rows K apart, addressed from one pointer; a partial tile repeats its last
// row, whose results are not stored, so no row past M is read).
struct PackedA {
  const float* p;
  float at(long r, long k) const { return p[k * MR + r]; }
};
struct RowsOfA {
  const float* p;
  float at(long r, long k) const { return p[r * K + k]; }
};
struct ClampedRowsOfA {
  const float* p;
  long mr;
  float at(long r, long k) const { return p[(r < mr ? r : mr - 1) * K + k]; }
};

// Streamed weights (b_row's Ahead): B prepacked.
constexpr bool STREAM = !INPLACE;

// The MR x NR register block at c over kc steps of k: rows a (an A accessor above) times the
// panel b (packed: NR values per k step; in place, INPLACE: B's rows, N apart, the first nr
// columns read where !FULLN); ahead: the lines of the next panel it prefetches (STREAM).
template <bool FULLN, class RowsA>
inline void micro(long kc, const RowsA& a, const float* __restrict b, float* c,
                  long mr, long nr, bool first, bool last, const AtvossArgs& g,
                  const float* res, long row0, long col0, const Ahead& ahead = {}) {
  vf acc[MR][NV];
#pragma GCC unroll 16
  for (long r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) acc[r][v] = vf{};
  long cnt[NV];
#pragma GCC unroll 8
  for (long v = 0; v < NV; ++v) cnt[v] = nr - v * VL < 0 ? 0 : (nr - v * VL < VL ? nr - v * VL : VL);
  if constexpr (PF > 0) {
    for (long r = 0; r < mr; ++r) __builtin_prefetch(c + r * N, 1);
  }
#pragma GCC unroll UNROLL
  for (long k = 0; k < kc; ++k) {
    if constexpr (PF > 0) {
      __builtin_prefetch(a.p + (k + PF) * MR);
      __builtin_prefetch(b + (k + PF) * NR);
    }
    if constexpr (STREAM) prefetch_ahead(ahead, k, kc);
    vf bv[NV];
    b_row<INPLACE, FULLN, N>(bv, b, k, cnt);
#pragma GCC unroll 16
    for (long r = 0; r < MR; ++r) {
      const float av = a.at(r, k);
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
        write_out<true>(g, p, x, last, res_row, col0 + v * VL, VL);
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
      const long n = cnt[v];
      float* p = c + r * N + v * VL;
      vf x = tmp[r][v];
      if (!first) x += load_n(p, n);
      write_out<false>(g, p, x, last, res_row, col0 + v * VL, n);
    }
  }
}

// The mc x nc block of C at (i0, j0) over the kc steps of k from pc: A and B packed into ap and
// bp, or (INPLACE) read where they are. first_read: the thread reads bp's panels here first
// (B prepacked: STREAM prefetches each next one); next: the panel it reads after this block
// (prefetched; null: none).
void macro(long mc, long nc, long kc, const float* A, const float* B, long pc, const float* ap, const float* bp,
           float* C, long i0, long j0, bool first, bool last, const AtvossArgs& g, const float* res,
           bool first_read = false, const float* next = nullptr) {
  auto tile = [&](long ir, long jr) {
    const long mr = mc - ir < MR ? mc - ir : MR, nr = nc - jr < NR ? nc - jr : NR;
    float* c = C + (i0 + ir) * N + j0 + jr;
    if constexpr (INPLACE) {
      const float* a = A + (i0 + ir) * K + pc;
      const float* b = B + pc * N + j0 + jr;
      auto run = [&](const auto& rows) {
        if (nr == NR) micro<true>(kc, rows, b, c, mr, nr, first, last, g, res, i0 + ir, j0 + jr);
        else micro<false>(kc, rows, b, c, mr, nr, first, last, g, res, i0 + ir, j0 + jr);
      };
      if (mr == MR) run(RowsOfA{a});
      else run(ClampedRowsOfA{a, mr});
    } else {
      Ahead ahead;
      if constexpr (STREAM) {
        // Panels outer: the register blocks of a panel share the next one. Rows outer (order
        // 2): the first row's block of a panel prefetches the next, the last row's last the
        // next block's first.
        const long bytes = kc * NR * 4;
        const float* p = jr + NR < nc ? (first_read ? bp + (jr + NR) * kc : nullptr) : next;
        if constexpr (ORDER != 2) ahead = share_of(p, bytes, (mc + MR - 1) / MR, ir / MR);
        else if (jr + NR < nc ? ir == 0 : ir + MR >= mc) ahead = share_of(p, bytes, 1, 0);
      }
      micro<true>(kc, PackedA{ap + ir * kc}, bp + jr * kc, c, mr, nr, first, last, g, res, i0 + ir, j0 + jr, ahead);
    }
  };
  if constexpr (ORDER == 2) {
    for (long ir = 0; ir < mc; ir += MR)
      for (long jr = 0; jr < nc; jr += NR) tile(ir, jr);
  } else {
    for (long jr = 0; jr < nc; jr += NR)
      for (long ir = 0; ir < mc; ir += MR) tile(ir, jr);
  }
}

// One thread's share of C (part_of): the BLIS loop nest of the schedule's order on it (nest()),
// A and B packed into the thread's own buffers, or read in place (INPLACE). With B prepacked
// (atvoss_pack_weights), its kc x nc blocks are read from there and nothing of B is packed.
void gemm(const float* A, const float* B, const float* b_packed, float* C, const AtvossArgs& g, const float* res,
          float* ap, float* bp, const Part& p) {
  nest(
      p, [&](long ic, long mc, long pc, long kc) { if (!INPLACE) pack_a(A, ic, mc, pc, kc, ap); },
      [&](long jc, long nc, long pc, long kc) {
        if (!INPLACE && !b_packed)
          for (long k0 = 0; k0 < kc; k0 += KB) pack_b_rows(B, jc, nc, pc, k0, kc, bp);
      },
      [&](long ic, long mc, long jc, long nc, long pc, long kc) {
        const float* b_block = b_packed ? b_packed + pc * NP + jc * kc : bp;
        // Prepacked B streams from memory: order 0 reads a block's panels first with the first A
        // block and goes on to the next k block (or the next column block) after the last;
        // order 1 reads every block's panels afresh, and goes on to the next column block (or
        // back to the first, one k block down).
        const bool last_a = ic + mc >= p.i1;
        const bool first_read = b_packed && (ORDER == 1 || ic == p.i0);
        const float* next = nullptr;
        if (b_packed && (ORDER == 1 || last_a)) {
          auto block_at = [&](long pc2, long jc2) {
            return b_packed + pc2 * NP + jc2 * (K - pc2 < KC ? K - pc2 : KC);
          };
          if (ORDER == 1 && jc + NC < p.j1) next = block_at(pc, jc + NC);
          else if (pc + kc < K) next = block_at(pc + kc, ORDER == 1 ? p.j0 : jc);
          else if (ORDER != 1 && jc + NC < p.j1) next = block_at(0, jc + NC);
        }
        macro(mc, nc, kc, A, B, pc, ap, b_block, C, ic, jc, pc == 0, pc + kc >= K, g, res, first_read, next);
      });
}

)";

// One k step's NV vectors of B for a register block: from a packed panel (NR floats a row,
// aligned) or in place (LD floats a row; only the first cnt[v] of each vector where !FULL, a
// partial panel at B's right edge). And the streaming of packed weights: in a model they come
// from memory, where the hardware's prefetcher stops at every 4 KiB page, so the register
// blocks that first read a panel prefetch the next one into L2, each its share of the lines,
// up to two a k step, while they compute (docs/decisions/host-conv-weight-stream.md). The fp32
// matmul's and conv's micro-kernels share both.
constexpr const char* kBRow = R"(struct Ahead {
  const char* p = nullptr;  // the next lines to prefetch
  long lines = 0;           // how many
};
// Register block `tile` of `tiles` on a panel: its share of the next panel (`bytes` long).
inline Ahead share_of(const float* next, long bytes, long tiles, long tile) {
  if (!next) return {};
  const long lines = bytes / 64, l0 = lines * tile / tiles;
  return {reinterpret_cast<const char*>(next) + l0 * 64, lines * (tile + 1) / tiles - l0};
}
// At k step k of `steps`: line k of the share, and line k + steps.
__attribute__((always_inline)) inline void prefetch_ahead(const Ahead& a, long k, long steps) {
  if (k < a.lines) __builtin_prefetch(a.p + k * 64, 0, 2);
  if (k + steps < a.lines) __builtin_prefetch(a.p + (k + steps) * 64, 0, 2);
}
template <bool IN_PLACE, bool FULL, long LD>
__attribute__((always_inline)) inline void b_row(vf (&bv)[NV], const float* __restrict b, long k,
                                                 const long (&cnt)[NV]) {
#pragma GCC unroll 8
  for (long v = 0; v < NV; ++v) {
    if constexpr (!IN_PLACE) bv[v] = *(const vf*)(b + k * NR + v * VL);
    else if constexpr (FULL) bv[v] = loadu(b + k * LD + v * VL);
    else bv[v] = load_n(b + k * LD + v * VL, cnt[v]);
  }
}
)";

constexpr const char* kPackB =
    R"(// B packed whole, once (kernel_abi.hpp): the KC-row blocks one after another, each NP wide, in
// the panels pack_b_rows writes, so a kc x nc block at (pc, jc) starts at pc * NP + jc * kc.
extern "C" { extern const long atvoss_packed_weight_bytes; }
const long atvoss_packed_weight_bytes = INPLACE ? 0 : BATCH * K * NP * 4;
extern "C" void atvoss_pack_weights(const AtvossArgs* g, void* out) {
  for (long b = 0; b < BATCH && !INPLACE; ++b) {
    for (long pc = 0; pc < K; pc += KC) {
      const long kc = K - pc < KC ? K - pc : KC;
      float* block = (float*)out + b * K * NP + pc * NP;
      for (long k0 = 0; k0 < kc; k0 += KB) pack_b_rows(g->b + b * K * N, 0, N, pc, k0, kc, block);
    }
  }
}

)";

constexpr const char* kCut = R"(inline long cut(long units, long parts, long i, long unit, long dim) {
  const long v = units * i / parts * unit;
  return v < dim ? v : dim;
}
)";
// Thread t's share of the M x N output, cell (t / TN, t % TN) of a TM x TN grid cut at whole
// micro-tiles (the last row or column of the grid takes the ragged edge), and the loop nest
// over it.
constexpr const char* kPart = R"(struct Part {
  long i0, i1, j0, j1;
};
inline Part part_of(long t) {
  constexpr long Q = (M + MR - 1) / MR, P = (N + NR - 1) / NR;
  const long r = t / TN, c = t % TN;
  return {cut(Q, TM, r, MR, M), cut(Q, TM, r + 1, MR, M), cut(P, TN, c, NR, N), cut(P, TN, c + 1, NR, N)};
}

// The cache-blocked loops over part p, each thread with its own packing buffers, so the
// threads never wait for each other inside a call (docs/decisions/host-thread-parts.md):
// order 1 mc -> kc -> nc (an A block reused), else nc -> kc -> mc (a B block reused).
// pack_a(ic, mc, pc, kc) runs before an A block's first use, pack_b(jc, nc, pc, kc) before a B
// block's, then block(ic, mc, jc, nc, pc, kc).
template <class PackA, class PackB, class Block>
inline void nest(const Part& p, PackA pack_a, PackB pack_b, Block block) {
  if constexpr (ORDER == 1) {
    for (long ic = p.i0; ic < p.i1; ic += MC) {
      const long mc = p.i1 - ic < MC ? p.i1 - ic : MC;
      for (long pc = 0; pc < K; pc += KC) {
        const long kc = K - pc < KC ? K - pc : KC;
        pack_a(ic, mc, pc, kc);
        for (long jc = p.j0; jc < p.j1; jc += NC) {
          const long nc = p.j1 - jc < NC ? p.j1 - jc : NC;
          pack_b(jc, nc, pc, kc);
          block(ic, mc, jc, nc, pc, kc);
        }
      }
    }
  } else {
    for (long jc = p.j0; jc < p.j1; jc += NC) {
      const long nc = p.j1 - jc < NC ? p.j1 - jc : NC;
      for (long pc = 0; pc < K; pc += KC) {
        const long kc = K - pc < KC ? K - pc : KC;
        pack_b(jc, nc, pc, kc);
        for (long ic = p.i0; ic < p.i1; ic += MC) {
          const long mc = p.i1 - ic < MC ? p.i1 - ic : MC;
          pack_a(ic, mc, pc, kc);
          block(ic, mc, jc, nc, pc, kc);
        }
      }
    }
  }
}
)";

}  // namespace

ThreadGrid thread_grid(long m, long n, long mr, long nr, long threads) {
  threads = std::max(1L, threads);
  const long q = (m + mr - 1) / mr, p = (n + nr - 1) / nr;
  const auto tiles = [&](long rows, long cols) { return (q + rows - 1) / rows * ((p + cols - 1) / cols); };
  long fewest = -1;
  for (long cols = threads; cols >= 1; --cols) {
    if (threads % cols == 0 && (fewest < 0 || tiles(threads / cols, cols) < fewest))
      fewest = tiles(threads / cols, cols);
  }
  // Among grids within 3 % of the fewest tiles, the one reading the least of A and B: each
  // column of parts reads all of A's M x K, each row all of B's K x N (a 4225 x 4608 im2col A
  // times 128 columns cut by columns streamed A twice, at 0.6x ONNX Runtime). Columns first
  // among equals: a column cut shares no B panel, the larger operand to pack where M is small.
  ThreadGrid best{threads, 1};
  long least = -1;
  for (long cols = threads; cols >= 1; --cols) {
    if (threads % cols != 0) continue;
    const long rows = threads / cols;
    if (100 * tiles(rows, cols) > 103 * fewest) continue;
    const long reads = cols * m + rows * n;
    if (least < 0 || reads < least) best = {rows, cols}, least = reads;
  }
  return best;
}

const char* cut_text() { return kCut; }
const char* b_row_text() { return kBRow; }

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
    << ", NC = " << whole_blocks(knob(knobs::tile_n), nr) << ", KC = " << kc
    << ";\n"
    // async_copy_depth: 0 A and B read in place (fp32), 1 packed, d > 1 packed and prefetched.
    << "constexpr bool INPLACE = " << (knob(knobs::async_copy_depth) == 0 ? "true" : "false") << ";\n"
    << "constexpr long PF = " << 8 * std::max(0L, knob(knobs::async_copy_depth) - 1) << ";\n"
    << "constexpr int ORDER = " << knob(knobs::tile_order) << ";\n";
  const ThreadGrid grid = thread_grid(shape.m, shape.n, mr, nr, knob(knobs::threads));
  o << "constexpr long TM = " << grid.rows << ", TN = " << grid.cols << ";\n" << kCut << kPart;
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
    << "constexpr long AP_FLOATS = INPLACE ? 0 : ((MC + MR) * KC + 15) / 16 * 16,\n"
    << "               BP_FLOATS = INPLACE ? 0 : ((NC + NR) * KC + 15) / 16 * 16;\n"
    << "constexpr long NP = (N + NR - 1) / NR * NR;  // B's width in whole panels\n"
    << "constexpr long ROWS = M, COLS = N;\n"
    << vector_helpers() << kBRow << epilogue_functions(split) << separate_pass_function()
    << with_unroll(kKernel, knob(knobs::k_steps)) << "}  // namespace\n\n"
    << threads_symbol_text(threads) << kPackB << "extern \"C\" void atvoss_kernel(const AtvossArgs* g) {\n"
    << "  static thread_local Scratch ap(" << threads << " * AP_FLOATS), bp(" << threads
    << " * BP_FLOATS);\n"
    // The caller's buffers, named outside the parallel loop: a worker's own thread_local is another one.
    << "  float* const ap_all = ap.p;\n  float* const bp_all = bp.p;\n"
    << "  const float* const b_packed = INPLACE ? nullptr : (const float*)g->qb_packed;\n"
    // One parallel region over every batch: each thread runs its part of each, so a batched
    // call waits at one barrier, not one per batch (on a core shared with other work, every
    // barrier can wait out a time slice).
    << "  PARALLEL_FOR\n"
    << "  for (long t = 0; t < THREADS; ++t) {\n"
    << "    for (long b = 0; b < BATCH; ++b) {\n"
    << "      const float* res = g->residual ? g->residual + b * M * N : nullptr;\n"
    << "      gemm(g->a + b * M * K, g->b ? g->b + b * K * N : nullptr, b_packed ? b_packed + b * K * NP : nullptr,\n"
    << "           g->c + b * M * N, *g, res, ap_all + t * AP_FLOATS, bp_all + t * BP_FLOATS, part_of(t));\n"
    << "    }\n  }\n";
  const std::string passes = separate_pass_calls(w, split, "C");
  if (!passes.empty()) {
    o << "  for (long b = 0; b < BATCH; ++b) {\n"
      << "    const float* res = g->residual ? g->residual + b * M * N : nullptr;\n"
      << "    float* C = g->c + b * M * N;\n"
      << passes << "  }\n";
  }
  o << "}\n";
  return o.str();
}

}  // namespace atvoss::host
