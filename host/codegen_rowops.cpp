#include "host/codegen_rowops.hpp"

#include <sstream>

#include "host/reference_rowops.hpp"
#include "host/vector_code.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

// walk(p, f, tail): the columns of one row — chunks of CV vectors (f(j, v) for vector v of
// the chunk, v indexing its accumulator), then single vectors (f(j, 0)), then the last
// n < VL columns (tail(j, n)). Prefetches PF floats ahead of p.
constexpr const char* kWalk = R"(
template <typename F, typename T>
inline void walk(const float* p, F f, T tail) {
  (void)p;
  long j = 0;
#pragma GCC unroll UNROLL
  for (; j + CV * VL <= N; j += CV * VL) {
    if constexpr (PF > 0) {
      for (long q = 0; q < CV * VL; q += 16) __builtin_prefetch(p + j + PF + q);
    }
#pragma GCC unroll 16
    for (long v = 0; v < CV; ++v) f(j + v * VL, v);
  }
  for (; j + VL <= N; j += VL) f(j, 0);
  if (j < N) tail(j, N - j);
}
// The accumulators of a chunk folded into the first.
inline vf fold_sum(vf* acc) { for (long v = 1; v < CV; ++v) acc[0] += acc[v]; return acc[0]; }
inline vf fold_max(vf* acc) { for (long v = 1; v < CV; ++v) acc[0] = vmax(acc[0], acc[v]); return acc[0]; }
constexpr float NEG_INF = -__builtin_inff();
// f(r, x, y) for each row r of the block of rows from r0: x its input row, y its output row.
template <typename F>
inline void each_row(const AtvossArgs& g, long r0, long rows, F f) {
  for (long r = 0; r < rows; ++r) f(r, g.a + (r0 + r) * N, g.c + (r0 + r) * N);
}
)";

// Elementwise and map: the main pass with the fused epilogue, then one pass per unfused op.
std::string map_block(const Workload& w, const lowering::FusionSplit& split) {
  const bool binary = w.op() == "elementwise";
  const std::string full = binary ? "loadu(a + j) + loadu(b + j)" : "loadu(a + j)";
  const std::string part = binary ? "load_n(a + j, n) + load_n(b + j, n)" : "load_n(a + j, n)";
  std::ostringstream o;
  o << "void block(const AtvossArgs& g, long r0, long rows) {\n"
    << "  for (long r = r0; r < r0 + rows; ++r) {\n"
    << "    const float* a = g.a + r * N;\n"
    << (binary ? "    const float* b = g.b + r * N;\n" : "") << "    float* c = g.c + r * N;\n"
    << "    const float* res = g.residual ? g.residual + r * N : nullptr;\n"
    << "    walk(a, [&](long j, long) { storeu(c + j, fused<true>(" << full << ", g, res, j, VL)); },\n"
    << "         [&](long j, long n) { store_n(c + j, fused<false>(" << part << ", g, res, j, n), n); });\n"
    << "  }\n";
  for (std::size_t i = 0; i < split.unfused.size(); ++i) {
    const std::string f = "unfused" + std::to_string(i);
    o << "  for (long r = r0; r < r0 + rows; ++r) {\n"
      << "    float* c = g.c + r * N;\n"
      << "    const float* res = g.residual ? g.residual + r * N : nullptr;\n"
      << "    walk(c, [&](long j, long) { storeu(c + j, " << f << "<true>(loadu(c + j), g, res, j, VL)); },\n"
      << "         [&](long j, long n) { store_n(c + j, " << f << "<false>(load_n(c + j, n), g, res, j, n), n); });\n"
      << "  }\n";
  }
  o << "}\n";
  return o.str();
}

// Softmax, tile_order 0: the max; exp(x - max) stored and summed; the scale by 1 / sum.
constexpr const char* kSoftmaxThreePass = R"(
void block(const AtvossArgs& g, long r0, long rows) {
  float mx[TM], inv[TM];
  each_row(g, r0, rows, [&](long r, const float* x, float*) {
    vf acc[CV];
    for (long v = 0; v < CV; ++v) acc[v] = vf{} + NEG_INF;
    walk(x, [&](long j, long v) { acc[v] = vmax(acc[v], loadu(x + j)); },
         [&](long j, long n) { acc[0] = vmax(acc[0], load_fill(x + j, n, NEG_INF)); });
    mx[r] = hmax(fold_max(acc));
  });
  each_row(g, r0, rows, [&](long r, const float* x, float* y) {
    const vf m = vf{} + mx[r];
    vf acc[CV] = {};
    walk(x, [&](long j, long v) { const vf e = vexp(loadu(x + j) - m); storeu(y + j, e); acc[v] += e; },
         [&](long j, long n) {
           const vf e = vexp(load_n(x + j, n) - m);
           store_n(y + j, e, n);
           acc[0] += first_lanes(n) ? e : vf{};
         });
    inv[r] = 1.0f / hsum(fold_sum(acc));
  });
  each_row(g, r0, rows, [&](long r, const float*, float* y) {
    const vf s = vf{} + inv[r];
    walk(y, [&](long j, long) { storeu(y + j, loadu(y + j) * s); },
         [&](long j, long n) { store_n(y + j, load_n(y + j, n) * s, n); });
  });
}
)";

// Softmax, tile_order 1 (online): per lane a running max and a sum rescaled when the max
// grows, combined across lanes; then exp(x - max) / sum in one pass.
constexpr const char* kSoftmaxOnline = R"(
void block(const AtvossArgs& g, long r0, long rows) {
  float mx[TM], inv[TM];
  each_row(g, r0, rows, [&](long r, const float* x, float*) {
    vf m[CV], s[CV];
    for (long v = 0; v < CV; ++v) m[v] = vf{} + NEG_INF, s[v] = vf{};
    walk(x, [&](long j, long v) {
           const vf xv = loadu(x + j), mn = vmax(m[v], xv);
           s[v] = s[v] * vexp(m[v] - mn) + vexp(xv - mn);
           m[v] = mn;
         },
         [&](long j, long n) {
           const vf xv = load_n(x + j, n), mn = vmax(m[0], xv);
           const vf sn = s[0] * vexp(m[0] - mn) + vexp(xv - mn);
           const vi keep = first_lanes(n);
           m[0] = keep ? mn : m[0];
           s[0] = keep ? sn : s[0];
         });
    float top = NEG_INF, sum = 0;
    for (long v = 0; v < CV; ++v) top = top > hmax(m[v]) ? top : hmax(m[v]);
    for (long v = 0; v < CV; ++v)
      for (int l = 0; l < VL; ++l) sum += s[v][l] * __builtin_expf(m[v][l] - top);
    mx[r] = top;
    inv[r] = 1.0f / sum;
  });
  each_row(g, r0, rows, [&](long r, const float* x, float* y) {
    const vf m = vf{} + mx[r], s = vf{} + inv[r];
    walk(x, [&](long j, long) { storeu(y + j, vexp(loadu(x + j) - m) * s); },
         [&](long j, long n) { store_n(y + j, vexp(load_n(x + j, n) - m) * s, n); });
  });
}
)";

// Layernorm's last pass: (x - mean) * rstd * gamma + beta.
constexpr const char* kLayernormNormalise = R"(
  each_row(g, r0, rows, [&](long r, const float* x, float* y) {
    const vf mu = vf{} + mean[r], rs = vf{} + rstd[r];
    walk(x, [&](long j, long) { storeu(y + j, (loadu(x + j) - mu) * rs * loadu(g.scale + j) + loadu(g.shift + j)); },
         [&](long j, long n) {
           store_n(y + j, (load_n(x + j, n) - mu) * rs * load_n(g.scale + j, n) + load_n(g.shift + j, n), n);
         });
  });
}
)";

// Layernorm, tile_order 0: the mean, then the centred variance.
constexpr const char* kLayernormTwoPass = R"(
void block(const AtvossArgs& g, long r0, long rows) {
  float mean[TM], rstd[TM];
  each_row(g, r0, rows, [&](long r, const float* x, float*) {
    vf acc[CV] = {};
    walk(x, [&](long j, long v) { acc[v] += loadu(x + j); }, [&](long j, long n) { acc[0] += load_n(x + j, n); });
    mean[r] = hsum(fold_sum(acc)) / N;
  });
  each_row(g, r0, rows, [&](long r, const float* x, float*) {
    const vf mu = vf{} + mean[r];
    vf acc[CV] = {};
    walk(x, [&](long j, long v) { const vf d = loadu(x + j) - mu; acc[v] += d * d; },
         [&](long j, long n) { const vf d = first_lanes(n) ? load_n(x + j, n) - mu : vf{}; acc[0] += d * d; });
    rstd[r] = 1.0f / __builtin_sqrtf(hsum(fold_sum(acc)) / N + EPS);
  });
)";

// Layernorm, tile_order 1: sum and sum of squares of x - x[0] in one pass (the shift keeps
// the difference of squares from cancelling when the mean is far from 0).
constexpr const char* kLayernormOnePass = R"(
void block(const AtvossArgs& g, long r0, long rows) {
  float mean[TM], rstd[TM];
  each_row(g, r0, rows, [&](long r, const float* x, float*) {
    const vf sh = vf{} + x[0];
    vf s[CV] = {}, q[CV] = {};
    walk(x, [&](long j, long v) { const vf d = loadu(x + j) - sh; s[v] += d; q[v] += d * d; },
         [&](long j, long n) {
           const vf d = first_lanes(n) ? load_n(x + j, n) - sh : vf{};
           s[0] += d;
           q[0] += d * d;
         });
    const float ms = hsum(fold_sum(s)) / N, var = hsum(fold_sum(q)) / N - ms * ms;
    mean[r] = x[0] + ms;
    rstd[r] = 1.0f / __builtin_sqrtf((var > 0 ? var : 0) + EPS);
  });
)";

std::string block_function(const Workload& w, const Schedule& s, const lowering::FusionSplit& split) {
  const bool online = s.get_or(std::string(knobs::tile_order), 0) == 1;
  if (w.op() == "softmax") return online ? kSoftmaxOnline : kSoftmaxThreePass;
  if (w.op() == "layernorm") return std::string(online ? kLayernormOnePass : kLayernormTwoPass) + kLayernormNormalise;
  return map_block(w, split);
}

}  // namespace

std::string generate_rowops_source(const Workload& w, const Schedule& s, const MachineInfo& m) {
  auto knob = [&](std::string_view k) { return long(s.at(std::string(k))); };
  const int threads = int(knob(knobs::threads));
  const lowering::FusionSplit split =
      lowering::split_epilogue(w.op(), w.epilogue(), int(s.get_or(std::string(knobs::fusion_level), 0)));
  std::ostringstream o;
  o << kernel_preamble(w, s, threads) << "constexpr long M = " << w.dim("M") << ", N = " << w.dim("N") << ";\n"
    << "constexpr long VL = " << m.lanes() << ", TM = " << knob(knobs::tile_m)
    << ", CV = " << knob(knobs::tile_n) / m.lanes() << ";\n"
    << "constexpr long PF = " << 128 * (knob(knobs::async_copy_depth) - 1) << ";\n"
    << "constexpr float EPS = " << kLayernormEpsilon << "f;\n"
    << vector_helpers() << epilogue_functions(split) << with_unroll(kWalk, knob(knobs::k_steps))
    << block_function(w, s, split) << "}  // namespace\n\n"
    << threads_symbol_text(threads) << "extern \"C\" void atvoss_kernel(const AtvossArgs* g) {\n"
    << "  PARALLEL_FOR\n"
    << "  for (long b = 0; b < (M + TM - 1) / TM; ++b) block(*g, b * TM, M - b * TM < TM ? M - b * TM : TM);\n"
    << "}\n";
  return o.str();
}

}  // namespace atvoss::host
