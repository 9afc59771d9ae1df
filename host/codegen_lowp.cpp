#include "host/codegen_lowp.hpp"

#include <algorithm>
#include <sstream>

#include "host/codegen.hpp"
#include "host/vector_code.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

// Expects TA, TB, ACC, INT8, KG (k elements per 32-bit lane), dot() for the dtype, LDB, the
// register block and the vector helpers declared before it.
constexpr const char* kLowHelpers = R"(
inline vi loadi(const void* p, long n) { vi v = {}; std::memcpy(&v, p, n * 4); return v; }
inline void storei(float* p, vi v, long n) { std::memcpy(p, &v, n * 4); }

// KG rows of B (LDB elements apart), NR columns from src, interleaved so that each 32-bit lane holds one column's
// KG consecutive k: byte (int8) or 16-bit (bf16) unpacks of row pairs, then (int8) 16-bit
// unpacks of the pairs, 16 bytes of a row at a time. bf16 takes 32 columns per step in
// 512-bit registers, whose 128-bit lanes are then put back into column order (4-9 % faster
// on the BERT shapes than 16 bytes at a time); the same for int8 at 256 bits was 5-13 % slower
// (docs/host-backend.md).
inline void interleave(const TB* src, TB* dst) {
  long c = 0;
  if constexpr (KG == 2) {
    // 32 columns per step: per 128-bit lane L, lo holds columns 8L..8L+3 and hi 8L+4..8L+7.
    for (; c + 32 <= NR; c += 32) {
      const __m512i r0 = _mm512_loadu_si512(src + c), r1 = _mm512_loadu_si512(src + LDB + c);
      const __m512i lo = _mm512_unpacklo_epi16(r0, r1), hi = _mm512_unpackhi_epi16(r0, r1);
      const __m512i a = _mm512_shuffle_i32x4(lo, hi, 0x44), b = _mm512_shuffle_i32x4(lo, hi, 0xee);
      _mm512_storeu_si512(dst + c * 2, _mm512_shuffle_i32x4(a, a, 0xd8));
      _mm512_storeu_si512(dst + c * 2 + 32, _mm512_shuffle_i32x4(b, b, 0xd8));
    }
  }
  for (; c < NR; c += 16 / sizeof(TB)) {
    const __m128i r0 = _mm_loadu_si128((const __m128i*)(src + c)), r1 = _mm_loadu_si128((const __m128i*)(src + LDB + c));
    __m128i* d = (__m128i*)(dst + c * KG);
    if constexpr (KG == 4) {
      const __m128i r2 = _mm_loadu_si128((const __m128i*)(src + 2 * LDB + c)), r3 = _mm_loadu_si128((const __m128i*)(src + 3 * LDB + c));
      const __m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpackhi_epi8(r0, r1);
      const __m128i t2 = _mm_unpacklo_epi8(r2, r3), t3 = _mm_unpackhi_epi8(r2, r3);
      _mm_storeu_si128(d, _mm_unpacklo_epi16(t0, t2));
      _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(t0, t2));
      _mm_storeu_si128(d + 2, _mm_unpacklo_epi16(t1, t3));
      _mm_storeu_si128(d + 3, _mm_unpackhi_epi16(t1, t3));
    } else {
      _mm_storeu_si128(d, _mm_unpacklo_epi16(r0, r1));
      _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(r0, r1));
    }
  }
}

// One k group into rows [LO, MR - HI) of the register block: NV vectors of a packed B row at
// b, and a 32-bit broadcast of each row's KG elements at a(r).
template <int LO = 0, int HI = 0, class RowOfA>
inline void dot_group(ACC (&acc)[MR][NV], const RowOfA& a, const TB* __restrict b) {
  __m512i bv[NV];
#pragma GCC unroll 8
  for (long v = 0; v < NV; ++v) bv[v] = _mm512_loadu_si512(b + v * VL * KG);
#pragma GCC unroll 16
  for (long r = LO; r < MR - HI; ++r) {
    int av;
    std::memcpy(&av, a(r), 4);
    const __m512i ab = _mm512_set1_epi32(av);
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) acc[r][v] = dot(acc[r][v], ab, bv[v]);
  }
}

// Writes an MR x NR register block back: rows.c(r) is row r's output at the block's first
// column, rows.res(r) its residual row (or null). int8: partial sums stay s32 in C's memory
// until the last k block, which dequantises and runs the fused epilogue; bf16 sums in fp32.
template <bool FULL, class Rows>
inline void write_back(ACC (&acc)[MR][NV], const Rows& rows, long mr, long nr, bool first, bool last,
                       const AtvossArgs& g, long col0, const int* comp) {
  (void)comp;
#pragma GCC unroll 16
  for (long r = 0; r < (FULL ? MR : mr); ++r) {
    const float* res_row = rows.res(r);
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) {
      if (!FULL && v * VL >= nr) break;
      const long n = FULL ? VL : (nr - v * VL < VL ? nr - v * VL : VL);
      float* p = rows.c(r) + v * VL;
      const long col = col0 + v * VL;
      if constexpr (INT8) {
        vi x = (vi)acc[r][v];
        if (!first) x += loadi(p, n);
        if (!last) {
          storei(p, x, n);
          continue;
        }
        const vf y = __builtin_convertvector(x - loadi(comp + col, n), vf) * load_n(g.qscale + col, n);
        store_out(g, p, fused<FULL>(y, g, res_row, col, n), n);
      } else {
        vf x = (vf)acc[r][v];
        if (!first) x += load_n(p, n);
        write_out<FULL>(g, p, x, last, res_row, col, n);
      }
    }
  }
}

// write_back of a block whose partial tile (mr x nr) takes the general path on a copy, so that
// acc stays in registers on the full path.
template <class Rows>
inline void write_block(ACC (&acc)[MR][NV], const Rows& rows, long mr, long nr, bool first, bool last,
                        const AtvossArgs& g, long col0, const int* comp) {
  if (mr == MR && nr == NR) {
    write_back<true>(acc, rows, mr, nr, first, last, g, col0, comp);
    return;
  }
  ACC tmp[MR][NV];
#pragma GCC unroll 16
  for (long r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) tmp[r][v] = acc[r][v];
  write_back<false>(tmp, rows, mr, nr, first, last, g, col0, comp);
}
)";

// The matmul, in pieces: A's packing and the micro-kernel differ between the AVX-512 dot
// products and AMX tiles; B's packing (the k-group panels both read), the micro-tile's rows
// and the BLIS loops are shared. Each expects kLowHelpers, the shape, the blocking and KPAD
// (k padded to whole groups, or to whole AMX tile rows) before it.
constexpr const char* kLowPackA = R"(
// Each MR-row micro-panel of A holds, per k group, the MR rows' KG elements side by side, so
// that one 32-bit broadcast feeds a row's group to the dot instruction.
void pack_a(const TA* A, long i0, long mc, long p0, long kc, TA* ap) {
  const long groups = (kc + KG - 1) / KG;
  for (long ib = 0; ib < mc; ib += MR) {
    TA* dst = ap + ib * groups * KG;
    const long rows = mc - ib < MR ? mc - ib : MR;
    for (long r = 0; r < MR; ++r) {
      const TA* src = r < rows ? A + (i0 + ib + r) * K + p0 : nullptr;
      for (long q = 0; q < groups; ++q) {
        TA* d = dst + (q * MR + r) * KG;
        if (src && q * KG + KG <= kc) {
          std::memcpy(d, src + q * KG, KG * sizeof(TA));
        } else {
          for (long e = 0; e < KG; ++e) d[e] = src && q * KG + e < kc ? src[q * KG + e] : TA(0);
        }
      }
    }
  }
}

)";

constexpr const char* kLowPackB = R"(
constexpr long padded_k(long kc) { return (kc + KPAD - 1) / KPAD * KPAD; }

// Groups q0 .. q0 + QB of every NR-wide panel of the kc x nc block of B at (p0, j0), zero past kc
// (up to padded_k(kc)).
constexpr long QB = 8 / KG;
void pack_b_groups(const TB* B, long j0, long nc, long p0, long q0, long kc, TB* bp) {
  const long groups = padded_k(kc) / KG;
  const long q1 = groups - q0 < QB ? groups : q0 + QB;
  for (long jb = 0; jb < nc; jb += NR) {
    const long cols = nc - jb < NR ? nc - jb : NR;
    TB* panel = bp + jb * groups * KG;
    for (long q = q0; q < q1; ++q) {
      TB* dst = panel + q * NR * KG;
      const long k0 = q * KG;
      if (cols == NR && k0 + KG <= kc) {
        interleave(B + (p0 + k0) * N + j0 + jb, dst);
        continue;
      }
      for (long c = 0; c < NR; ++c)
        for (long e = 0; e < KG; ++e)
          dst[c * KG + e] = c < cols && k0 + e < kc ? B[(p0 + k0 + e) * N + j0 + jb + c] : TB(0);
    }
  }
}

)";

constexpr const char* kLowRows = R"(
// Rows of a micro-tile of C (write_back's Rows): N apart, the residual's likewise.
struct MatrixRows {
  float* c0;
  const float* res0;
  long row0;
  float* c(long r) const { return c0 + r * N; }
  const float* res(long r) const { return res0 ? res0 + (row0 + r) * N : nullptr; }
};

)";

constexpr const char* kLowMicro = R"(
inline void begin_tiles() {}
inline void end_tiles() {}

inline void micro(long kc, const TA* __restrict a, const TB* __restrict b, float* c, long mr, long nr,
                  bool first, bool last, const AtvossArgs& g, const float* res, long row0, long col0,
                  const int* comp) {
  ACC acc[MR][NV];
#pragma GCC unroll 16
  for (long r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (long v = 0; v < NV; ++v) acc[r][v] = ACC{};
  if constexpr (PF > 0) {
    for (long r = 0; r < mr; ++r) __builtin_prefetch(c + r * N, 1);
  }
  const long groups = (kc + KG - 1) / KG;
#pragma GCC unroll UNROLL
  for (long q = 0; q < groups; ++q) {
    if constexpr (PF > 0) {
      __builtin_prefetch(a + (q + PF) * MR * KG);
      __builtin_prefetch(b + (q + PF) * NR * KG);
    }
    dot_group(acc, [&](long r) { return a + (q * MR + r) * KG; }, b + q * NR * KG);
  }
  write_block(acc, MatrixRows{c, res, row0}, mr, nr, first, last, g, col0, comp);
}

)";

constexpr const char* kLowDrive = R"(
void macro(long mc, long nc, long kc, const TA* ap, const TB* bp, float* C, long i0, long j0, bool first,
           bool last, const AtvossArgs& g, const float* res, const int* comp) {
  const long gk = padded_k(kc);
  begin_tiles();
  auto tile = [&](long ir, long jr) {
    const long mr = mc - ir < MR ? mc - ir : MR, nr = nc - jr < NR ? nc - jr : NR;
    micro(kc, ap + ir * gk, bp + jr * gk, C + (i0 + ir) * N + j0 + jr, mr, nr, first, last, g, res, i0 + ir,
          j0 + jr, comp);
  };
  if constexpr (ORDER == 2) {
    for (long ir = 0; ir < mc; ir += MR)
      for (long jr = 0; jr < nc; jr += NR) tile(ir, jr);
  } else {
    for (long jr = 0; jr < nc; jr += NR)
      for (long ir = 0; ir < mc; ir += MR) tile(ir, jr);
  }
  end_tiles();
}

// B packed whole, once (kernel_abi.hpp): the KC-row blocks one after another, each NP wide in
// the panels pack_b_groups writes, so a kc x nc block at (pc, jc) starts at
// packed_block(pc) + jc * padded_k(kc).
constexpr long NP = (N + NR - 1) / NR * NR;
constexpr long packed_block(long pc) { return pc / KC * NP * padded_k(KC); }
constexpr long B_PACKED = packed_block(K) + (K % KC ? NP * padded_k(K % KC) : 0);

// The kc x nc block of B at (pc, jc), every group of it, into bp.
void pack_b_block(const TB* B, long jc, long nc, long pc, long kc, TB* bp) {
  for (long q0 = 0; q0 < padded_k(kc) / KG; q0 += QB) pack_b_groups(B, jc, nc, pc, q0, kc, bp);
}

void pack_b_whole(const TB* B, TB* out) {
  for (long pc = 0; pc < K; pc += KC) pack_b_block(B, 0, N, pc, K - pc < KC ? K - pc : KC, out + packed_block(pc));
}

// One thread's share of C (part_of) in the loop nest (nest()), A packed into its buffer and B
// too, unless b_packed holds it packed whole.
void gemm(const TA* A, const TB* B, const TB* b_packed, float* C, const AtvossArgs& g, const float* res, TA* ap,
          TB* bp, const int* comp, const Part& p) {
  nest(
      p, [&](long ic, long mc, long pc, long kc) { pack_a(A, ic, mc, pc, kc, ap); },
      [&](long jc, long nc, long pc, long kc) {
        if (!b_packed) pack_b_block(B, jc, nc, pc, kc, bp);
      },
      [&](long ic, long mc, long jc, long nc, long pc, long kc) {
        const TB* b_block = b_packed ? b_packed + packed_block(pc) + jc * padded_k(kc) : bp;
        macro(mc, nc, kc, ap, b_block, C, ic, jc, pc == 0, pc + kc >= K, g, res, comp);
      });
}

)";

// AMX tiles (16 rows of 64 bytes): an A tile is 16 rows of TK k-elements, a B tile TK / KG
// k groups of 16 columns (the packed panel's own rows, NR * KG elements apart), a C tile
// 16 x 16 accumulators. An MR x NR micro-tile is MT x NT C tiles in tmm0..3 (tile 2i + j),
// its A tiles in tmm4..5 and B tiles in tmm6..7.
constexpr const char* kAmx = R"(
constexpr long TK = 64 / sizeof(TA);
constexpr long MT = MR / 16, NT = NR / 16;
using ACC_ELEM = typename std::conditional<INT8, int, float>::type;

struct TileConfig {
  unsigned char palette = 1, start_row = 0, reserved[14] = {};
  unsigned short colsb[16] = {};
  unsigned char rows[16] = {};
};

inline void configure_tiles() {
  TileConfig cfg;
  for (long t = 0; t < 8; ++t) {
    const bool used = t < 4 ? (t / 2 < MT && t % 2 < NT) : t < 6 ? t - 4 < MT : t - 6 < NT;
    cfg.rows[t] = used ? 16 : 0;
    cfg.colsb[t] = used ? 64 : 0;
  }
  _tile_loadconfig(&cfg);
}

// Linux hands a process the tile state only when asked (arch_prctl ARCH_REQ_XCOMP_PERM for
// XTILEDATA); without it the first tile instruction faults.
inline bool amx_permitted() { return syscall(SYS_arch_prctl, 0x1023, 18) == 0; }

// Each thread loads the configuration for its macro-tile (another kernel on the thread may
// have changed it) and releases the tile state after.
inline void begin_tiles() { configure_tiles(); }
inline void end_tiles() { _tile_release(); }

// The A block as MR-row panels of whole rows, padded_k(kc) elements each, zero past kc and mc.
void pack_a(const TA* A, long i0, long mc, long p0, long kc, TA* ap) {
  const long kp = padded_k(kc);
  for (long r = 0; r < (mc + MR - 1) / MR * MR; ++r) {
    TA* dst = ap + r * kp;
    if (r < mc) {
      std::memcpy(dst, A + (i0 + r) * K + p0, kc * sizeof(TA));
      std::memset(dst + kc, 0, (kp - kc) * sizeof(TA));
    } else {
      std::memset(dst, 0, kp * sizeof(TA));
    }
  }
}

inline void micro(long kc, const TA* __restrict a, const TB* __restrict b, float* c, long mr, long nr,
                  bool first, bool last, const AtvossArgs& g, const float* res, long row0, long col0,
                  const int* comp) {
  const long kp = padded_k(kc);
  _tile_zero(0);
  if constexpr (NT > 1) _tile_zero(1);
  if constexpr (MT > 1) _tile_zero(2);
  if constexpr (MT > 1 && NT > 1) _tile_zero(3);
#pragma GCC unroll UNROLL
  for (long k0 = 0; k0 < kp; k0 += TK) {
    _tile_loadd(4, a + k0, kp * sizeof(TA));
    if constexpr (MT > 1) _tile_loadd(5, a + 16 * kp + k0, kp * sizeof(TA));
    const TB* bk = b + k0 * NR;
    _tile_loadd(6, bk, NR * KG * sizeof(TB));
    if constexpr (NT > 1) _tile_loadd(7, bk + 16 * KG, NR * KG * sizeof(TB));
    TILE_DOT(0, 4, 6);
    if constexpr (NT > 1) TILE_DOT(1, 4, 7);
    if constexpr (MT > 1) TILE_DOT(2, 5, 6);
    if constexpr (MT > 1 && NT > 1) TILE_DOT(3, 5, 7);
  }
  alignas(64) ACC_ELEM out[MR][NR];
  _tile_stored(0, &out[0][0], NR * 4);
  if constexpr (NT > 1) _tile_stored(1, &out[0][16], NR * 4);
  if constexpr (MT > 1) _tile_stored(2, &out[16][0], NR * 4);
  if constexpr (MT > 1 && NT > 1) _tile_stored(3, &out[16][16], NR * 4);
  ACC acc[MR][NV];
  for (long r = 0; r < MR; ++r)
    for (long v = 0; v < NV; ++v) std::memcpy(&acc[r][v], &out[r][v * VL], 64);
  write_block(acc, MatrixRows{c, res, row0}, mr, nr, first, last, g, col0, comp);
}
)";

constexpr const char* kLowPackedWeights = R"(extern "C" { extern const long atvoss_packed_weight_bytes; }
const long atvoss_packed_weight_bytes = BATCH * B_PACKED * sizeof(TB);
extern "C" void atvoss_pack_weights(const AtvossArgs* g, void* out) {
  const TB* qb = static_cast<const TB*>(g->qb);
  for (long b = 0; b < BATCH; ++b) pack_b_whole(qb + b * K * N, static_cast<TB*>(out) + b * B_PACKED);
}
)";

constexpr const char* kInt8Types = R"(
using TA = unsigned char;
using TB = signed char;
using ACC = __m512i;
constexpr bool INT8 = true;
constexpr long KG = 4;
inline __m512i dot(__m512i acc, __m512i a, __m512i b) { return _mm512_dpbusd_epi32(acc, a, b); }
)";

constexpr const char* kBf16Types = R"(
using TA = unsigned short;
using TB = unsigned short;
using ACC = __m512;
constexpr bool INT8 = false;
constexpr long KG = 2;
inline __m512 dot(__m512 acc, __m512i a, __m512i b) { return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b); }
)";

}  // namespace

const char* low_precision_types(DType d) { return d == DType::int8 ? kInt8Types : kBf16Types; }
const char* low_precision_helpers() { return kLowHelpers; }

std::string generate_low_precision_source(const Workload& w, const Schedule& s, const MachineInfo& m) {
  auto knob = [&](std::string_view k) { return long(s.at(std::string(k))); };
  const lowering::FusionSplit split = lowering::split_epilogue(w.op(), w.epilogue(), int(knob(knobs::fusion_level)));
  const int threads = int(knob(knobs::threads));
  const bool int8 = w.dtype() == DType::int8;
  const bool amx = s.get_or(std::string(knobs::amx_tiles), 0) == 1;
  const long kg = int8 ? 4 : 2, elem = int8 ? 1 : 2;
  const long kc = (knob(knobs::tile_k) + kg - 1) / kg * kg;

  std::ostringstream o;
  // AMX intrinsics whatever -march says: the space offers AMX only where the CPU has it.
  if (amx) o << "#pragma GCC target(\"amx-tile,amx-int8,amx-bf16\")\n#include <sys/syscall.h>\n#include <unistd.h>\n";
  o << "#include <immintrin.h>\n#include <type_traits>\n"
    << kernel_preamble(w, s, threads) << matmul_constants(w, s, m, kc)
    << "constexpr long ROWS = M, COLS = N, LDB = N;\n"
    << low_precision_types(w.dtype()) << "constexpr long KPAD = " << (amx ? "64 / sizeof(TA)" : "KG") << ";\n"
    << (amx ? std::string("#define TILE_DOT ") + (int8 ? "_tile_dpbusd" : "_tile_dpbf16ps") + "\n" : "")
    // Elements per thread's packing buffer, whole cache lines.
    << "constexpr long AP_ELEMS = ((MC + MR) * ((KC + KPAD - 1) / KPAD * KPAD) * " << elem << " + 63) / 64 * 64 / "
    << elem << ", BP_ELEMS = ((NC + NR) * ((KC + KPAD - 1) / KPAD * KPAD) * " << elem << " + 63) / 64 * 64 / " << elem
    << ";\n"
    << vector_helpers() << epilogue_functions(split) << separate_pass_function() << kLowHelpers;
  std::string kernel = amx ? std::string(kLowPackB) + kLowRows + kAmx + kLowDrive
                           : std::string(kLowPackA) + kLowPackB + kLowRows + kLowMicro + kLowDrive;
  o << with_unroll(kernel, knob(knobs::k_steps)) << "}  // namespace\n\n"
    << threads_symbol_text(threads) << kLowPackedWeights << "extern \"C\" void atvoss_kernel(const AtvossArgs* g) {\n";
  if (amx) o << "  static const bool permitted = amx_permitted();\n  if (!permitted) __builtin_trap();\n";
  o << "  static thread_local Scratch ap(" << threads << " * AP_ELEMS * sizeof(TA) / 4), bp(" << threads
    << " * BP_ELEMS * sizeof(TB) / 4);\n"
    << "  TA* const ap_all = (TA*)ap.p;\n  TB* const bp_all = (TB*)bp.p;\n"
    << "  const TA* qa = static_cast<const TA*>(g->qa);\n"
    << "  const TB* qb = static_cast<const TB*>(g->qb);\n"
    << "  const TB* qb_packed = static_cast<const TB*>(g->qb_packed);\n"
    << "  for (long b = 0; b < BATCH; ++b) {\n"
    << "    const float* res = g->residual ? g->residual + b * M * N : nullptr;\n"
    << "    float* C = g->c + b * M * N;\n"
    << "    PARALLEL_FOR\n"
    << "    for (long t = 0; t < THREADS; ++t)\n"
    << "      gemm(qa + b * M * K, qb ? qb + b * K * N : nullptr, qb_packed ? qb_packed + b * B_PACKED : nullptr, C, "
       "*g,\n"
    << "           res, ap_all + t * AP_ELEMS, bp_all + t * BP_ELEMS,\n"
    << "           INT8 ? g->qcomp + b * N : nullptr, part_of(t));\n";
  o << separate_pass_calls(w, split, "C") << "  }\n}\n";
  return o.str();
}

}  // namespace atvoss::host
