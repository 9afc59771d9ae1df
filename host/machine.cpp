#include "host/machine.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include <unistd.h>

#include "core/error.hpp"
#include "core/file_lock.hpp"
#include "core/json.hpp"
#include "host/cpu_unit.hpp"
#include "host/digest.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace atvoss::host {
namespace {

namespace fs = std::filesystem;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "32K", "1M", "32768K" -> bytes; 0 if unparsable.
std::int64_t parse_size(std::string s) {
  s = trim(s);
  if (s.empty()) return 0;
  std::int64_t mult = 1;
  const char u = s.back();
  if (u == 'K' || u == 'k') mult = 1 << 10;
  if (u == 'M' || u == 'm') mult = 1 << 20;
  if (mult != 1) s.pop_back();
  try {
    return std::stoll(s) * mult;
  } catch (const std::exception&) {
    return 0;
  }
}

std::string read_line(const fs::path& p) {
  std::ifstream f(p);
  std::string line;
  std::getline(f, line);
  return trim(line);
}

// The cache levels found, as bits 1 << level (1 = L1d, 2 = L2, 3 = L3).
using CacheLevels = unsigned;
constexpr CacheLevels kEveryLevel = 0b1110;
// The measured FMA chains are clamped to this, and a cached value beyond it is measured again
// (Target's own bound on fma_chains is wider).
constexpr int kMaxFmaChains = 64;

// The first size found for a level wins; other levels (L4, a garbled sysfs entry) are ignored.
void set_cache(MachineInfo& info, int level, bool data_or_unified, std::int64_t size, CacheLevels& found) {
  if (level < 1 || level > 3 || size <= 0 || !data_or_unified || (found & (1u << level))) return;
  (level == 1 ? info.l1d_bytes : level == 2 ? info.l2_bytes : info.l3_bytes) = size;
  found |= 1u << level;
}

CacheLevels read_caches(const std::string& cpu_sys, MachineInfo& info) {
  CacheLevels found = 0;
  const fs::path dir = fs::path(cpu_sys) / "cpu0" / "cache";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    const std::string level = read_line(entry.path() / "level");
    const std::string type = read_line(entry.path() / "type");
    const std::int64_t size = parse_size(read_line(entry.path() / "size"));
    if (level.size() != 1) continue;
    set_cache(info, level[0] - '0', level == "1" ? type == "Data" : type != "Instruction", size, found);
  }
  return found;
}

#if defined(__x86_64__)
// Some virtual machines expose no cache directories in sysfs; the CPU still describes its
// caches through CPUID: the deterministic leaves (4 on Intel, 0x8000001D on AMD) where they
// are filled in, else AMD's legacy leaves 0x80000005/6. Levels sysfs gave are kept.
void read_caches_cpuid(MachineInfo& info, CacheLevels& found) {
  for (unsigned leaf : {4u, 0x8000001Du}) {
    if (__get_cpuid_max(leaf & 0x80000000u, nullptr) < leaf) continue;
    for (unsigned sub = 0; sub < 8; ++sub) {
      unsigned a = 0, b = 0, c = 0, d = 0;
      __cpuid_count(leaf, sub, a, b, c, d);
      const unsigned type = a & 31;  // 1 data, 2 instruction, 3 unified; 0 ends the list
      if (type == 0) break;
      const std::int64_t size =
          std::int64_t((b >> 22) + 1) * (((b >> 12) & 0x3ff) + 1) * ((b & 0xfff) + 1) * (std::int64_t(c) + 1);
      set_cache(info, int((a >> 5) & 7), type != 2, size, found);
    }
  }
  if (__get_cpuid_max(0x80000000u, nullptr) >= 0x80000006u) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    __cpuid(0x80000005u, a, b, c, d);
    set_cache(info, 1, true, std::int64_t(c >> 24) << 10, found);
    __cpuid(0x80000006u, a, b, c, d);
    set_cache(info, 2, true, std::int64_t(c >> 16) << 10, found);
    set_cache(info, 3, true, std::int64_t(d >> 18) << 19, found);
  }
}
#endif

// Widest vector, register count and FMA from the flags (x86 "flags", AArch64 "Features").
void derive_simd(MachineInfo& info) {
  const auto has = [&](const char* f) { return info.has_flag(f); };
  if (info.arch == "aarch64") {
    info.simd_bytes = 16;
    info.vector_registers = 32;
    info.fma = has("asimd");
    return;
  }
  info.simd_bytes = has("avx512f") ? 64 : has("avx") ? 32 : 16;
  info.vector_registers = has("avx512f") ? 32 : 16;
  info.fma = has("fma");
}

// Single-core FMA throughput: independent accumulator chains, so latency is hidden.
#if defined(__x86_64__)
// Twelve named accumulators (an array would live on the stack), two FMA ports x latency 4-5.
// One body for both vector widths: P is the intrinsics' prefix (_mm256, _mm512).
#define ATVOSS_FMA_CHAINS(V, P)                                                                       \
  V a0 = P##_set1_ps(0.0f), a1 = P##_set1_ps(0.1f), a2 = P##_set1_ps(0.2f), a3 = P##_set1_ps(0.3f),   \
    a4 = P##_set1_ps(0.4f), a5 = P##_set1_ps(0.5f), a6 = P##_set1_ps(0.6f), a7 = P##_set1_ps(0.7f),   \
    a8 = P##_set1_ps(0.8f), a9 = P##_set1_ps(0.9f), a10 = P##_set1_ps(1.0f), a11 = P##_set1_ps(1.1f); \
  const V m = P##_set1_ps(0.999999f), c = P##_set1_ps(1e-7f);                                         \
  const auto t0 = std::chrono::steady_clock::now();                                                   \
  for (long it = 0; it < iters; ++it) {                                                               \
    a0 = P##_fmadd_ps(a0, m, c);                                                                      \
    a1 = P##_fmadd_ps(a1, m, c);                                                                      \
    a2 = P##_fmadd_ps(a2, m, c);                                                                      \
    a3 = P##_fmadd_ps(a3, m, c);                                                                      \
    a4 = P##_fmadd_ps(a4, m, c);                                                                      \
    a5 = P##_fmadd_ps(a5, m, c);                                                                      \
    a6 = P##_fmadd_ps(a6, m, c);                                                                      \
    a7 = P##_fmadd_ps(a7, m, c);                                                                      \
    a8 = P##_fmadd_ps(a8, m, c);                                                                      \
    a9 = P##_fmadd_ps(a9, m, c);                                                                      \
    a10 = P##_fmadd_ps(a10, m, c);                                                                    \
    a11 = P##_fmadd_ps(a11, m, c);                                                                    \
  }                                                                                                   \
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();      \
  V sum = P##_add_ps(P##_add_ps(P##_add_ps(a0, a1), P##_add_ps(a2, a3)),                              \
                     P##_add_ps(P##_add_ps(a4, a5), P##_add_ps(a6, a7)));                             \
  sum = P##_add_ps(sum, P##_add_ps(P##_add_ps(a8, a9), P##_add_ps(a10, a11)));                        \
  float sink[sizeof(V) / 4];                                                                          \
  P##_storeu_ps(sink, sum);                                                                           \
  __asm__ volatile("" : : "r"(sink) : "memory");                                                      \
  return 2.0 * double(sizeof(V) / 4) * 12 * double(iters) / s * 1e-9;

// One dependent chain: each FMA waits for the previous one, so this runs at one vector FMA
// per latency. Peak over it is the number of chains a core needs (pipes x latency).
#define ATVOSS_FMA_ONE_CHAIN(V, P)                                                               \
  V a = P##_set1_ps(0.5f);                                                                       \
  const V m = P##_set1_ps(0.999999f), c = P##_set1_ps(1e-7f);                                    \
  const auto t0 = std::chrono::steady_clock::now();                                              \
  for (long it = 0; it < iters; ++it) a = P##_fmadd_ps(a, m, c);                                 \
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); \
  float sink[sizeof(V) / 4];                                                                     \
  P##_storeu_ps(sink, a);                                                                        \
  __asm__ volatile("" : : "r"(sink) : "memory");                                                 \
  return 2.0 * double(sizeof(V) / 4) * double(iters) / s * 1e-9;

__attribute__((target("avx2,fma"))) double fma_gflops_avx2(long iters) { ATVOSS_FMA_CHAINS(__m256, _mm256) }
__attribute__((target("avx2,fma"))) double one_chain_gflops_avx2(long iters) { ATVOSS_FMA_ONE_CHAIN(__m256, _mm256) }

// The code generator uses 64-byte vectors where AVX-512 is present; on cores with a full-width
// 512-bit FMA their peak is twice the 256-bit one.
__attribute__((target("avx512f"))) double fma_gflops_avx512(long iters) { ATVOSS_FMA_CHAINS(__m512, _mm512) }
__attribute__((target("avx512f"))) double one_chain_gflops_avx512(long iters) { ATVOSS_FMA_ONE_CHAIN(__m512, _mm512) }
#undef ATVOSS_FMA_CHAINS
#undef ATVOSS_FMA_ONE_CHAIN
#endif

// Portable fallback: mul + add on 4-lane vectors (counted as 2 FLOPs per lane).
double fma_gflops_generic(long iters) {
  typedef float v4 __attribute__((vector_size(16)));
  v4 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = v4{} + float(i) * 1e-3f;
  const v4 m = v4{} + 0.999999f, a = v4{} + 1e-7f;
  const auto t0 = std::chrono::steady_clock::now();
  for (long it = 0; it < iters; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = acc[i] * m + a;
    __asm__ volatile("" : : "g"(&acc) : "memory");
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 2.0 * 4 * 12 * double(iters) / s * 1e-9;
}

// Streaming read of a buffer far larger than the last-level cache.
double read_bandwidth_gbs(std::int64_t bytes) {
  std::vector<std::uint64_t> buf(std::size_t(bytes / 8), 1);
  double best = 0;
  for (int pass = 0; pass < 8; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t sum = 0;
    for (std::uint64_t v : buf) sum += v;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    __asm__ volatile("" : : "r"(sum));
    best = std::max(best, double(bytes) / s * 1e-9);
  }
  return best;
}

double two_digits(double v) {
  if (v <= 0) return v;
  const double scale = std::pow(10.0, std::floor(std::log10(v)) - 1);
  return std::round(v / scale) * scale;
}

// The /proc/cpuinfo flags the fingerprint names: the ISA extensions -march=native turns into
// code for these kernels (and the ones codegen tests itself). kLegacyFlags: the fingerprint's
// flags before version 2.
const std::set<std::string> kLegacyFlags = {"sse2",     "avx",      "avx2",        "fma",         "avx512f",
                                            "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile",
                                            "amx_int8", "amx_bf16", "asimd",       "sve"};
const std::set<std::string> kIsaFlags = [] {
  std::set<std::string> s = kLegacyFlags;
  s.insert({"avx_vnni", "avx512dq", "avx512cd", "avx512_fp16", "avx512ifma", "avx512vbmi", "avx512_vbmi2", "f16c",
            "bmi2", "sve2"});
  return s;
}();

fs::path cache_file(const std::string& dir, const std::string& target_name) {
  return fs::path(dir) / (target_name + ".json");
}

std::optional<Calibration> load_cached(const fs::path& file, const std::string& fingerprint) {
  std::ifstream f(file);
  if (!f) return std::nullopt;
  try {
    const Json j = Json::parse(f);
    if (j.value("fingerprint", "") != fingerprint) return std::nullopt;
    // A file from before fma_chains was measured lacks it: measured again.
    Calibration c{j.at("peak_gflops").get<double>(), j.at("bandwidth_gbs").get<double>(),
                  j.at("fma_chains").get<int>()};
    if (c.peak_gflops > 0 && c.bandwidth_gbs > 0 && c.fma_chains >= 0 && c.fma_chains <= kMaxFmaChains) return c;
  } catch (const std::exception&) {
    // A damaged cache file is measured again and rewritten.
  }
  return std::nullopt;
}

void store_cached(const fs::path& file, const MachineInfo& info, const Calibration& c) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  const fs::path tmp = file.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp);
    f << Json{{"fingerprint", info.fingerprint()},
              {"model", info.model},
              {"peak_gflops", c.peak_gflops},
              {"bandwidth_gbs", c.bandwidth_gbs},
              {"fma_chains", c.fma_chains}}
             .dump(2);
    if (!f) return;  // an unwritable cache only costs a re-measurement next time
  }
  fs::rename(tmp, file, ec);
}

Target to_target(const MachineInfo& info, const Calibration& c) {
  register_cpu_unit();  // the lowering plans host targets through it (cpu_unit.hpp)
  Target t;
  t.name = info.target_name();
  t.organisation = "cpu";
  // The dtypes the host backend generates matmuls in (host_space.hpp): int8 and bf16 need
  // AVX-512 VNNI and BF16 (codegen_lowp.hpp).
  t.matrix_dtypes = {DType::float32};
  const bool zmm = info.simd_bytes == 64;
  if (zmm && info.has_flag("avx512_vnni")) t.matrix_dtypes.push_back(DType::int8);
  if (zmm && info.has_flag("avx512_bf16")) t.matrix_dtypes.push_back(DType::bfloat16);
  t.ai_cores = t.vector_cores = info.physical_cores;
  t.clock_ghz = 1.0;
  t.cube_m = info.lanes();
  t.cube_n = t.cube_k = 1;
  const double macs_per_ns = c.peak_gflops / 2.0;
  t.fp32_rate = macs_per_ns / info.lanes();
  // vpdpbusd does 4 u8 x s8 MACs per 32-bit lane where vfmadd231ps does one: 4x the fp32
  // rate, from the instruction's width, not measured ("est." below).
  t.int8_rate = zmm && info.has_flag("avx512_vnni") ? 4.0 * t.fp32_rate : 1.0;
  t.vector_bytes_per_cycle = macs_per_ns * 4;
  t.l0a_bytes = t.l0b_bytes = t.ub_bytes = info.l1d_bytes;
  t.l0c_bytes = std::int64_t(info.vector_registers) * info.simd_bytes;
  t.l1_bytes = info.l2_bytes;
  t.l2_bytes = info.l3_bytes;
  t.hbm_bytes_per_cycle = t.mte2_bytes_per_cycle = c.bandwidth_gbs;
  t.mte1_a_bytes_per_cycle = t.mte1_b_bytes_per_cycle = 2.0 * info.simd_bytes;
  t.mte3_bytes_per_cycle = info.simd_bytes;
  t.launch_us = 0.05;
  t.max_buffers_per_queue = 4;
  t.fma_chains = c.fma_chains;
  t.source = Json{{"name", "host-<sha256 of model, SIMD flags, physical cores>"},
                  {"model", info.model},
                  {"clock_ghz", "1: a cycle is a nanosecond"},
                  {"fp32_rate", "measured single-core FMA peak " + std::to_string(c.peak_gflops) + " GFLOP/s"},
                  {"hbm_bytes_per_cycle", "measured single-core read bandwidth (GB/s)"},
                  {"int8_rate", "est.: 4 x fp32_rate with AVX-512 VNNI, else unused"},
                  {"fma_chains", "measured: FMA peak / the rate of one dependent FMA chain"},
                  {"l0a_bytes", "L1d from sysfs"},
                  {"l1_bytes", "L2 from sysfs"},
                  {"l2_bytes", "L3 from sysfs"},
                  {"mte1_a_bytes_per_cycle", "est."},
                  {"mte1_b_bytes_per_cycle", "est."},
                  {"mte3_bytes_per_cycle", "est."},
                  {"launch_us", "est."}};
  return t;
}

}  // namespace

std::string MachineInfo::fingerprint() const {
  std::string text = "v2\nmodel=" + model + "\nfamily=" + family + "\nmodel_number=" + model_number +
                     "\nstepping=" + stepping + "\narch=" + arch + "\nflags=";
  for (const auto& f : simd_flags) text += f + " ";
  text += "\ncores=" + std::to_string(physical_cores) + "\nl1d=" + std::to_string(l1d_bytes) +
          "\nl2=" + std::to_string(l2_bytes) + "\nl3=" + std::to_string(l3_bytes);
  return sha256_hex(text);
}

std::string MachineInfo::legacy_fingerprint() const {
  std::string text = "model=" + model + "\narch=" + arch + "\nflags=";
  for (const auto& f : simd_flags) {
    if (kLegacyFlags.count(f)) text += f + " ";
  }
  text += "\ncores=" + std::to_string(physical_cores);
  return sha256_hex(text);
}

std::string MachineInfo::legacy_target_name() const { return "host-" + legacy_fingerprint().substr(0, 12); }

bool MachineInfo::has_flag(std::string_view flag) const {
  return std::find(simd_flags.begin(), simd_flags.end(), flag) != simd_flags.end();
}

std::string MachineInfo::target_name() const { return "host-" + fingerprint().substr(0, 12); }

MachineInfo probe_machine(const MachineRoots& roots) {
  const fs::path cpuinfo = fs::path(roots.proc) / "cpuinfo";
  std::ifstream f(cpuinfo);
  if (!f) throw Error(ErrorKind::io, "host: cannot read " + cpuinfo.string());
  MachineInfo info;
#if defined(__aarch64__)
  info.arch = "aarch64";
#else
  info.arch = "x86_64";
#endif
  std::set<std::string> flags;
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::string physical;
  int processors = 0;
  std::string line;
  while (std::getline(f, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "processor") ++processors;
    if ((key == "model name" || key == "CPU part") && info.model == "unknown") info.model = value;
    const auto first = [&](std::string& field) {
      if (field.empty()) field = value;
    };
    if (key == "cpu family" || key == "CPU implementer") first(info.family);
    if (key == "model" || key == "CPU variant") first(info.model_number);
    if (key == "stepping" || key == "CPU revision") first(info.stepping);
    if (key == "physical id") physical = value;
    if (key == "core id") cores.emplace(physical, value);
    if (key == "flags" || key == "Features") {
      std::istringstream words(value);
      for (std::string w; words >> w;) {
        if (kIsaFlags.count(w)) flags.insert(w);
      }
    }
  }
  info.simd_flags.assign(flags.begin(), flags.end());
  info.physical_cores = std::max<int>(1, cores.empty() ? processors : int(cores.size()));
  derive_simd(info);
  CacheLevels found = read_caches(roots.cpu_sys, info);
#if defined(__x86_64__)
  // CPUID describes this process's CPU, so only when the roots are the real ones (a test's
  // fake machine keeps what its files say).
  if (roots.cpu_sys == MachineRoots{}.cpu_sys && found != kEveryLevel) read_caches_cpuid(info, found);
#endif
  return info;
}

// Best of many short windows: on a shared machine some window runs without preemption, and
// the best one is the core's capability (a long average would measure the other tenants).
Calibration measure_calibration(const MachineInfo& info) {
  Calibration c;
  const long iters = 20'000;  // ~4 MFLOP: tens of microseconds per window
  auto best_of = [&](auto&& f) {
    double best = 0;
    for (int i = 0; i < 400; ++i) best = std::max(best, f(iters));
    return best;
  };
  double one_chain = 0;
#if defined(__x86_64__)
  if (info.simd_bytes >= 64 && __builtin_cpu_supports("avx512f")) {
    c.peak_gflops = best_of(fma_gflops_avx512);
    one_chain = best_of(one_chain_gflops_avx512);
  } else if (info.simd_bytes >= 32 && info.fma && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    c.peak_gflops = best_of(fma_gflops_avx2);
    one_chain = best_of(one_chain_gflops_avx2);
  }
#endif
  if (c.peak_gflops == 0) c.peak_gflops = best_of(fma_gflops_generic);
  // Without a fused FMA loop to time, the register block's issue model assumes the common
  // two pipes of latency four (costmodel/features.cpp).
  if (one_chain > 0) c.fma_chains = std::clamp(int(std::lround(c.peak_gflops / one_chain)), 1, kMaxFmaChains);
  const std::int64_t llc = std::max<std::int64_t>(info.l3_bytes, info.l2_bytes);
  // A CPUID-reported L3 may be the whole package's (hundreds of MB); 512 MB is far past any
  // one core's share.
  c.bandwidth_gbs = read_bandwidth_gbs(std::clamp<std::int64_t>(4 * llc, 128 << 20, 512 << 20));
  c.peak_gflops = two_digits(c.peak_gflops);
  c.bandwidth_gbs = two_digits(c.bandwidth_gbs);
  return c;
}

std::string default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/atvoss";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/atvoss";
  // A shared temporary directory only through a private per-user subdirectory (the builder
  // checks its owner and mode before it puts or runs anything there).
  return (fs::temp_directory_path() / ("atvoss-cache-" + std::to_string(::geteuid()))).string();
}

// An exclusive flock on <cache file>.lock while the calibration is measured and stored. The
// measured figures are part of the host target's key, so processes that measured at once on
// a cold cache (each a little differently, on a busy machine) got different targets: their
// records and claims did not meet. With the lock, one measures and the others read its file.
// Best effort: without a lock (the directory cannot be made), each process measures.
std::optional<FileLock> calibration_lock(const fs::path& file) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  try {
    return FileLock::take(file.string() + ".lock", true);
  } catch (const Error&) {
    return std::nullopt;
  }
}

namespace {

std::string cache_dir_of(const DescribeOptions& options) {
  return options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
}

// The figures measured under the legacy name, if its cache file still holds them.
std::optional<Calibration> legacy_calibration(const std::string& dir, const MachineInfo& info) {
  return load_cached(cache_file(dir, info.legacy_target_name()), info.legacy_fingerprint());
}

}  // namespace

Target describe_machine(const DescribeOptions& options) {
  const MachineInfo info = probe_machine(options.roots);
  const std::string dir = cache_dir_of(options);
  const fs::path file = cache_file(dir, info.target_name());
  std::optional<Calibration> c = load_cached(file, info.fingerprint());
  if (!c) {
    const auto lock = calibration_lock(file);
    c = load_cached(file, info.fingerprint());  // another process may have measured while this one waited
    if (!c) {
      // The same CPU measured under its legacy name: its figures carry over, so the target
      // keeps the figures its adopted records were measured with.
      c = legacy_calibration(dir, info);
      if (!c) c = options.measure(info);
      store_cached(file, info, *c);
    }
  }
  return to_target(info, *c);
}

Target former_host_target(const DescribeOptions& options) {
  const MachineInfo info = probe_machine(options.roots);
  const std::optional<Calibration> legacy = legacy_calibration(cache_dir_of(options), info);
  Target t = legacy ? to_target(info, *legacy) : describe_machine(options);
  t.name = info.legacy_target_name();
  return t;
}

MachineRoots process_roots() {
  MachineRoots roots;
  if (const char* root = std::getenv(kTestMachineRootEnv); root && *root) {
    roots.proc = std::string(root) + "/proc";
    roots.cpu_sys = std::string(root) + "/sys/devices/system/cpu";
  }
  return roots;
}

const MachineInfo& this_machine() {
  static const MachineInfo info = probe_machine(process_roots());
  return info;
}

const Target& describe_machine() {
  static const Target t = [] {
    DescribeOptions options;
    options.roots = process_roots();
    return describe_machine(options);
  }();
  return t;
}

bool is_host_target(const Target& t) { return t.organisation == "cpu"; }

void require_this_machine(const Target& t) {
  const std::string local = this_machine().target_name();
  if (t.name != local) {
    throw_bad_input("target '" + t.name + "' is a host fingerprint of another CPU; this machine is '" + local +
                    "' (host results never mix across CPUs)");
  }
}

double core_peak_gflops(const Target& t) { return t.peak_flops(DType::float32) / t.ai_cores * 1e-9; }

}  // namespace atvoss::host
