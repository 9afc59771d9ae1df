#include "host/codegen.hpp"

#include <algorithm>
#include <sstream>

#include "host/codegen_conv.hpp"
#include "host/kernel_abi.hpp"
#include "host/operands.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

// Vector helpers and a Cephes-style expf (max relative error ~1e-7) for gelu.
constexpr const char* kHelpers = R"(
typedef float vf __attribute__((vector_size(VL * 4)));
typedef int vi __attribute__((vector_size(VL * 4)));
inline vf loadu(const float* p) { vf v; std::memcpy(&v, p, sizeof v); return v; }
inline void storeu(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
inline vf load_n(const float* p, long n) { vf v = {}; std::memcpy(&v, p, n * 4); return v; }
inline void store_n(float* p, vf v, long n) { std::memcpy(p, &v, n * 4); }
inline vf vexp(vf x) {
  const vf hi = vf{} + 88.0f, lo = vf{} - 88.0f;
  x = x < hi ? x : hi;
  x = x > lo ? x : lo;
  const vf fx = x * 1.44269504088896341f + 0.5f;
  vf fn = __builtin_convertvector(__builtin_convertvector(fx, vi), vf);
  fn = fn > fx ? fn - 1.0f : fn;
  const vf r = x - fn * 0.693359375f + fn * 2.12194440e-4f;
  vf y = vf{} + 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const vi e = (__builtin_convertvector(fn, vi) + 127) << 23;
  vf p2;
  std::memcpy(&p2, &e, sizeof p2);
  return y * p2;
}
// 0.5 x (1 + tanh(u)) == x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
inline vf gelu(vf x) {
  const vf u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x / (1.0f + vexp(-2.0f * u));
}
)";

// The body of one epilogue op on vector v at column col (n valid lanes).
std::string op_statement(const std::string& op) {
  if (op == "bias") return "v += L(g.bias + col);";
  if (op == "batchnorm") return "v = v * L(g.scale + col) + L(g.shift + col);";
  if (op == "relu") return "v = v > vf{} ? v : vf{};";
  if (op == "gelu") return "v = gelu(v);";
  if (op == "add") return "v += L(res_row + col);";
  return "#error unsupported epilogue op " + op;
}

std::string epilogue_function(const std::string& name, const std::vector<std::string>& ops) {
  std::ostringstream o;
  o << "template <bool FULL>\ninline vf " << name
    << "(vf v, const AtvossArgs& g, const float* res_row, long col, long n) {\n"
    << "  (void)g; (void)res_row; (void)col; (void)n;\n"
    << "  auto L = [&](const float* p) { if constexpr (FULL) return loadu(p); else return load_n(p, n); };\n"
    << "  (void)L;\n";
  for (const auto& op : ops) o << "  " << op_statement(op) << "\n";
  o << "  return v;\n}\n";
  return o.str();
}

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

void pack_b(const float* B, long j0, long nc, long p0, long kc, float* bp) {
  for (long jb = 0; jb < nc; jb += NR) {
    float* dst = bp + jb * kc;
    const long cols = nc - jb < NR ? nc - jb : NR;
    for (long k = 0; k < kc; ++k) {
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

void gemm(const float* A, const float* B, float* C, const AtvossArgs& g, const float* res,
          float* ap, float* bp) {
  auto block = [&](long ic, long jc, long pc, bool pack_a_now, bool pack_b_now) {
    const long mc = M - ic < MC ? M - ic : MC, nc = N - jc < NC ? N - jc : NC;
    const long kc = K - pc < KC ? K - pc : KC;
    if (pack_a_now) pack_a(A, ic, mc, pc, kc, ap);
    if (pack_b_now) pack_b(B, jc, nc, pc, kc, bp);
    macro(mc, nc, kc, ap, bp, C, ic, jc, pc == 0, pc + kc >= K, g, res);
  };
  if constexpr (ORDER == 1) {
    for (long ic = 0; ic < M; ic += MC)
      for (long pc = 0; pc < K; pc += KC)
        for (long jc = 0; jc < N; jc += NC) block(ic, jc, pc, jc == 0, true);
  } else {
    for (long jc = 0; jc < N; jc += NC)
      for (long pc = 0; pc < K; pc += KC)
        for (long ic = 0; ic < M; ic += MC) block(ic, jc, pc, true, ic == 0);
  }
}

// One separate pass over C per unfused epilogue op.
template <typename F>
void separate_pass(float* C, const AtvossArgs& g, const float* res, F full, F part) {
  for (long i = 0; i < M; ++i) {
    float* row = C + i * N;
    const float* res_row = res ? res + i * N : nullptr;
    long j = 0;
    for (; j + VL <= N; j += VL) storeu(row + j, full(loadu(row + j), g, res_row, j, VL));
    if (j < N) store_n(row + j, part(load_n(row + j, N - j), g, res_row, j, N - j), N - j);
  }
}
)";

long round_to(long v, long step) { return std::max(step, v / step * step); }

}  // namespace

std::string vector_helpers_source() { return kHelpers; }
std::string epilogue_source(const std::string& name, const std::vector<std::string>& ops) {
  return epilogue_function(name, ops);
}

std::string generate_source(const Workload& w, const Schedule& s, const MachineInfo& m) {
  if (w.is_conv()) return generate_conv_source(w, s, m);
  const MatmulShape shape = matmul_shape(w);
  auto knob = [&](std::string_view k) { return long(s.at(std::string(k))); };
  const long mr = knob(knobs::micro_m), nr = knob(knobs::micro_n);
  const lowering::FusionSplit split = lowering::split_epilogue(w.epilogue(), int(knob(knobs::fusion_level)));
  const long depth = knob(knobs::async_copy_depth);

  std::ostringstream o;
  o << "// atvoss host kernel: " << w.label() << "\n// schedule " << s.to_json().dump() << "\n"
    << "#include <cstdlib>\n#include <cstring>\n" << kKernelAbiText << "namespace {\n"
    << "constexpr long BATCH = " << shape.batch << ", M = " << shape.m << ", N = " << shape.n
    << ", K = " << shape.k << ";\n"
    << "constexpr long VL = " << m.lanes() << ", MR = " << mr << ", NR = " << nr
    << ", NV = NR / VL;\n"
    << "constexpr long MC = " << round_to(knob(knobs::tile_m), mr)
    << ", NC = " << round_to(knob(knobs::tile_n), nr) << ", KC = " << knob(knobs::tile_k) << ";\n"
    << "constexpr long PF = " << 8 * (depth - 1) << ";\n"
    << "constexpr int ORDER = " << knob(knobs::tile_order) << ";\n"
    << kHelpers << epilogue_function("fused", split.fused);
  for (std::size_t i = 0; i < split.unfused.size(); ++i) {
    o << epilogue_function("unfused" + std::to_string(i), {split.unfused[i]});
  }
  std::string kernel = kKernel;
  const std::string unroll = "UNROLL";
  kernel.replace(kernel.find(unroll), unroll.size(), std::to_string(knob(knobs::k_steps)));
  o << kernel << "}  // namespace\n\n"
    << "extern \"C\" void atvoss_kernel(const AtvossArgs* g) {\n"
    << "  static float* ap = static_cast<float*>(std::aligned_alloc(64, ((MC + MR) * KC * 4 + 63) / 64 * 64));\n"
    << "  static float* bp = static_cast<float*>(std::aligned_alloc(64, ((NC + NR) * KC * 4 + 63) / 64 * 64));\n"
    << "  for (long b = 0; b < BATCH; ++b) {\n"
    << "    const float* res = g->residual ? g->residual + b * M * N : nullptr;\n"
    << "    float* C = g->c + b * M * N;\n"
    << "    gemm(g->a + b * M * K, g->b + b * K * N, C, *g, res, ap, bp);\n";
  for (std::size_t i = 0; i < split.unfused.size(); ++i) {
    const std::string f = "unfused" + std::to_string(i);
    o << "    separate_pass(C, *g, res, " << f << "<true>, " << f << "<false>);\n";
  }
  o << "  }\n}\n";
  return o.str();
}

}  // namespace atvoss::host
