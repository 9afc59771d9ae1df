#include "host/vector_code.hpp"

#include <algorithm>
#include <sstream>

#include "host/kernel_abi.hpp"
#include "host/kernel_object.hpp"

namespace atvoss::host {
namespace {

// Vector helpers and a Cephes-style expf (max relative error ~1e-7) for the GELUs, sigmoid,
// silu, tanh, mish and softmax.
constexpr const char* kHelpers = R"(
typedef float vf __attribute__((vector_size(VL * 4)));
typedef int vi __attribute__((vector_size(VL * 4)));
inline vf loadu(const float* p) { vf v; std::memcpy(&v, p, sizeof v); return v; }
inline void storeu(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
// n lanes of a vector at a ragged edge: a whole vector where n is one (a partial tile's full
// vectors: a memcpy of a variable length is a library call, and made a depthwise conv whose
// channels end mid-panel 3.5x slower), else one masked load or store with AVX-512 (GCC's
// builtins: immintrin.h adds a fifth to every kernel's compile time), else lane by lane (a
// 24-channel depthwise conv spent most of its time so: docs/decisions/host-depthwise-rows.md).
// Templates, so that a discarded branch for another vector width is never compiled.
template <class V>
inline V masked_load(const float* p, V fill, long n) {
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64) return __builtin_ia32_loadups512_mask(p, fill, (unsigned short)((1u << n) - 1));
#endif
  V v = fill;
  for (long i = 0; i < n; ++i) v[i] = p[i];
  return v;
}
template <class V>
inline void masked_store(float* p, V v, long n) {
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64) return __builtin_ia32_storeups512_mask(p, v, (unsigned short)((1u << n) - 1));
#endif
  for (long i = 0; i < n; ++i) p[i] = v[i];
}
inline vf load_n(const float* p, long n) { return n >= VL ? loadu(p) : masked_load(p, vf{}, n > 0 ? n : 0); }
inline void store_n(float* p, vf v, long n) {
  if (n >= VL) return storeu(p, v);
  masked_store(p, v, n > 0 ? n : 0);
}
// kernel_abi.hpp's u8 output: v is on the last qout grid (quantize_dequantize ran last), so its
// code is v / scale + zero point, exactly; written to qc at p's offset in c.
typedef unsigned char vb __attribute__((vector_size(VL)));
inline void store_codes(const AtvossArgs& g, const float* p, vf v, long n) {
  const float* grid = g.qout + LAST_GRID;
  const vb q = __builtin_convertvector(__builtin_convertvector(v * (1.0f / grid[0]) + (grid[1] + 0.5f), vi), vb);
  std::memcpy(g.qc + (p - g.c), &q, n);
}
// The last write of n lanes of an output: their values to c or, where MAY_CODE (the write-back's
// default: CODES, the epilogue's quantize is fused) and qc is set, their u8 codes to qc (and the
// values to c too where qc_with_c is set).
template <bool MAY_CODE = CODES>
inline void store_out(const AtvossArgs& g, float* p, vf v, long n) {
  if constexpr (MAY_CODE) {
    if (g.qc) {
      store_codes(g, p, v, n);
      if (!g.qc_with_c) return;
    }
  }
  store_n(p, v, n);
}
// The first n lanes from p, the others `fill` (the neutral element of a reduction).
inline vf load_fill(const float* p, long n, float fill) { return masked_load(p, vf{} + fill, n < VL ? n : VL); }
inline vi lane_index() { vi l; for (int i = 0; i < VL; ++i) l[i] = i; return l; }
inline vi first_lanes(long n) { return lane_index() < (vi{} + int(n)); }
inline vf vmax(vf a, vf b) { return a > b ? a : b; }
inline float hsum(vf v) { float s = 0; for (int i = 0; i < VL; ++i) s += v[i]; return s; }
inline float hmax(vf v) { float m = v[0]; for (int i = 1; i < VL; ++i) m = m > v[i] ? m : v[i]; return m; }
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
// kernel_abi.hpp's quantise-dequantise onto the u8 grid of q = {scale, zero point}.
inline vf quantize_dequantize(vf x, const float* q) {
  vf r = x * (1.0f / q[0]) + q[1];
  r = r > 0.0f ? r : vf{};
  r = r < 255.0f ? r : vf{} + 255.0f;
  const vf level = __builtin_convertvector(__builtin_convertvector(r + 0.5f, vi), vf);
  return (level - q[1]) * q[0];
}
// 0.5 x (1 + tanh(u)) == x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
inline vf gelu(vf x) {
  const vf u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x / (1.0f + vexp(-2.0f * u));
}
// The erf GELU, 0.5 x (1 + erf(x / sqrt 2)): erfc(|z|) by Abramowitz and Stegun's 7.1.26
// (absolute error under 1.5e-7), 1 + erf(z) taken as 2 - erfc(z) above 0 and erfc(-z) below, so
// that no cancellation loses the small values of a large negative x.
inline vf gelu_erf(vf x) {
  const vf z = x * 0.70710678118654752f, a = z < 0.0f ? -z : z, t = 1.0f / (1.0f + 0.3275911f * a);
  const vf poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const vf erfc = poly * vexp(-a * a);
  return 0.5f * x * (z < 0.0f ? erfc : 2.0f - erfc);
}
// tanh: (1 - e) / (1 + e), e = exp(-2|x|), signed; below |x| = 1/8, where 1 - e cancels, its
// series to x^7 (the next term is under 1e-9 of x there).
inline vf vtanh(vf x) {
  const vf a = x < 0.0f ? -x : x, e = vexp(-2.0f * a), x2 = x * x;
  const vf t = (1.0f - e) / (1.0f + e);
  const vf series = x * (1.0f + x2 * (-1.0f / 3 + x2 * (2.0f / 15 + x2 * (-17.0f / 315))));
  return a < 0.125f ? series : (x < 0.0f ? -t : t);
}
// mish: x tanh(softplus(x)) == x n (n + 2) / (n (n + 2) + 2), n = exp(x); x itself above 20,
// where n (n + 2) overflows and the factor is 1 in fp32.
inline vf vmish(vf x) {
  const vf n = vexp(x < 20.0f ? x : vf{} + 20.0f), t = n * (n + 2.0f);
  return x < 20.0f ? x * t / (t + 2.0f) : x;
}
)";

struct EpilogueOp {
  const char* name;
  const char* statement;  // on vector v at column col; L loads n lanes of an N-vector operand
};

constexpr EpilogueOp kEpilogueOps[] = {
    {"bias", "v += L(g.bias + col);"},
    {"batchnorm", "v = v * L(g.scale + col) + L(g.shift + col);"},
    {"relu", "v = v > vf{} ? v : vf{};"},
    {"relu6", "v = v > vf{} ? v : vf{}; v = v < vf{} + 6.0f ? v : vf{} + 6.0f;"},
    {"gelu", "v = gelu(v);"},
    {"gelu_erf", "v = gelu_erf(v);"},
    {"sigmoid", "v = 1.0f / (1.0f + vexp(-v));"},
    {"silu", "v = v / (1.0f + vexp(-v));"},
    {"leaky_relu", "v = v < vf{} ? v * L(g.slope + col) : v;"},
    {"tanh", "v = vtanh(v);"},
    {"hardswish",
     "{ vf h = v * (1.0f / 6) + 0.5f; h = h > vf{} ? h : vf{}; h = h < 1.0f ? h : vf{} + 1.0f; v = v * h; }"},
    {"hardsigmoid", "{ vf h = v * (1.0f / 6) + 0.5f; h = h > vf{} ? h : vf{}; v = h < 1.0f ? h : vf{} + 1.0f; }"},
    {"mish", "v = vmish(v);"},
    {"add", "v += L(res_row + col);"},
    {"quantize", "v = quantize_dequantize(v, g.qout + GRID);"},
    {"requantize", "v = quantize_dequantize(v, g.qout + GRID);"},
    {"dequantize", "(void)0;  // the int8 write-back has dequantised already"},
};

const EpilogueOp* find_epilogue_op(const std::string& op) {
  for (const auto& e : kEpilogueOps) {
    if (op == e.name) return &e;
  }
  return nullptr;
}

}  // namespace

bool generates_epilogue_op(const std::string& op) { return find_epilogue_op(op) != nullptr; }

std::string first_unsupported_epilogue(const std::vector<std::string>& ops) {
  const auto it = std::find_if(ops.begin(), ops.end(), [](const auto& op) { return !generates_epilogue_op(op); });
  return it == ops.end() ? "" : *it;
}

std::string vector_helpers() { return kHelpers; }

std::string epilogue_function(const std::string& name, const std::vector<std::string>& ops, int first_grid) {
  std::ostringstream o;
  o << "template <bool FULL>\ninline vf " << name
    << "(vf v, const AtvossArgs& g, const float* res_row, long col, long n) {\n"
    << "  (void)g; (void)res_row; (void)col; (void)n;\n"
    << "  auto L = [&](const float* p) { if constexpr (FULL) return loadu(p); else return load_n(p, n); };\n"
    << "  (void)L;\n";
  int grid = first_grid;  // the quantize ops' {scale, zero point} pairs in qout, in order
  for (const auto& op : ops) {
    const EpilogueOp* e = find_epilogue_op(op);
    std::string statement = e ? e->statement : "#error unsupported epilogue op " + op;
    if (const auto at = statement.find("GRID"); at != std::string::npos) {
      statement.replace(at, 4, std::to_string(2 * grid++));
    }
    o << "  " << statement << "\n";
  }
  o << "  return v;\n}\n";
  return o.str();
}

namespace {

std::string parallel_text(int threads) {
  if (threads <= 1) return "#define PARALLEL_FOR\nconstexpr long THREADS = 1;\n";
  return "#include <omp.h>\n#define PARALLEL_FOR _Pragma(\"omp parallel for num_threads(" + std::to_string(threads) +
         ") schedule(static)\")\nconstexpr long THREADS = " + std::to_string(threads) + ";\n";
}

// A calling thread's buffer: kernels keep their packing buffers and padded images in
// `static thread_local Scratch`, so that concurrent calls from different threads (the runtime
// takes no lock, docs/runtime.md) never share one, while the kernel's OpenMP team works in its
// caller's. Zeroed once: a padded image's border is never written again.
constexpr const char* kScratch = R"(
struct Scratch {
  float* p = nullptr;
  explicit Scratch(long floats) {
    if (floats <= 0) return;
    const long bytes = (floats * 4 + 63) / 64 * 64;
    p = static_cast<float*>(std::aligned_alloc(64, bytes));
    std::memset(p, 0, bytes);
  }
  ~Scratch() { std::free(p); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};
)";

// One pass over the ROWS x COLS output of one call (or batch entry) per unfused epilogue op,
// its rows ld floats apart (the residual's dense), split among the threads.
// WRITE_CODES: the pass of the epilogue's last op, a quantize, may write u8 codes (store_out).
constexpr const char* kSeparatePass = R"(
template <bool WRITE_CODES, typename F>
void separate_pass(float* out, long ld, const AtvossArgs& g, const float* res, F full, F part) {
  PARALLEL_FOR
  for (long i = 0; i < ROWS; ++i) {
    float* row = out + i * ld;
    const float* res_row = res ? res + i * COLS : nullptr;
    long j = 0;
    for (; j + VL <= COLS; j += VL) store_out<WRITE_CODES>(g, row + j, full(loadu(row + j), g, res_row, j, VL), VL);
    if (j < COLS)
      store_out<WRITE_CODES>(g, row + j, part(load_n(row + j, COLS - j), g, res_row, j, COLS - j), COLS - j);
  }
}
)";

}  // namespace

bool writes_codes(const Workload& w) {
  const auto& ep = w.epilogue();
  const bool op = w.is_matmul_like() || w.op() == "conv2d" || w.op() == "depthwise_conv2d";
  return op && !ep.empty() && (ep.back() == "quantize" || ep.back() == "requantize");
}

std::string kernel_preamble(const Workload& w, const Schedule& s, int threads) {
  const auto split = lowering::split_epilogue(w.op(), w.epilogue(), int(s.get_or("fusion_level", 0)));
  const bool codes = writes_codes(w) && split.unfused.empty();
  return "// atvoss host kernel: " + w.label() + "\n// schedule " + s.to_json().dump() +
         "\n#include <cstdlib>\n#include <cstring>\n" + parallel_text(threads) + kKernelAbiText +
         workload_symbol_text(w) + "constexpr bool CODES = " + (codes ? "true" : "false") + ";\n" +
         "constexpr long LAST_GRID = " + std::to_string(2 * std::max(0, w.quantize_grids() - 1)) + ";\n" +
         "namespace {\n" + kScratch;
}

std::string separate_pass_function() { return kSeparatePass; }

// The write of an output vector at the end of a k block: the last block's values go through the
// fused epilogue to store_out; an earlier block's partial sums are stored as they are.
constexpr const char* kWriteOut = R"(template <bool FULL>
inline void write_out(const AtvossArgs& g, float* p, vf x, bool last, const float* res_row, long col, long n) {
  if (last)
    store_out(g, p, fused<FULL>(x, g, res_row, col, n), n);
  else
    store_n(p, x, n);
}
)";

std::string epilogue_functions(const lowering::FusionSplit& split) {
  std::string out = epilogue_function("fused", split.fused, 0) + kWriteOut;
  int grid = quantize_grids(split.fused);
  for (std::size_t i = 0; i < split.unfused.size(); ++i) {
    out += epilogue_function("unfused" + std::to_string(i), {split.unfused[i]}, grid);
    grid += quantize_grids({split.unfused[i]});
  }
  return out;
}

std::string separate_pass_calls(const Workload& w, const lowering::FusionSplit& split, const std::string& out,
                                const std::string& ld) {
  std::string text;
  for (std::size_t i = 0; i < split.unfused.size(); ++i) {
    const std::string f = "unfused" + std::to_string(i);
    const bool codes = writes_codes(w) && i + 1 == split.unfused.size();
    text += "    separate_pass<" + std::string(codes ? "true" : "false") + ">(" + out + ", " + ld + ", *g, res, " + f +
            "<true>, " + f + "<false>);\n";
  }
  return text;
}

std::string with_unroll(std::string text, long unroll) {
  const std::string mark = "UNROLL";
  return text.replace(text.find(mark), mark.size(), std::to_string(unroll));
}

std::string threads_symbol_text(int threads) {
  const std::string symbol = kThreadsSymbol;
  return "extern \"C\" { extern const int " + symbol + "; }\nconst int " + symbol + " = " +
         std::to_string(std::max(1, threads)) + ";\n";
}

}  // namespace atvoss::host
