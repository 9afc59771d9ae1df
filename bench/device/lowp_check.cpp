// lowp_check: runs the kernels bench/device/export_lowp_kernels.cpp wrote (compiled to
// DIR/<name>.so) on this CPU, needing nothing but the kernel ABI (host/kernel_abi.hpp), so it
// builds where the project's packages are missing (run_lowp_check.sh).
//   check  every output against exact arithmetic: int8 u8 x s8 with a zero point 7, the
//          compensation and a power-of-two scale (each output is qscale * float(int32 sum),
//          which the kernel must reproduce bit for bit); bf16 on small integers, whose fp32
//          sums are exact. Prints "ok" or the count of wrong outputs.
//   time   one core (the caller pins it): median of 7 windows of >= 20 ms, GOP/s = 2MNK / t,
//          and per shape and dtype the best AMX and best dot-product schedule and their ratio.
// Kernels of a CPU feature this one lacks (amx_*, avx512_*) are skipped, saying which.
// Usage: lowp_check DIR   (exit 1 if any check fails)
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "host/kernel_abi.hpp"

namespace {

using atvoss::host::AtvossArgs;
using atvoss::host::KernelFn;

struct Entry {
  std::string group, name, dtype, label, schedule;
  long batch = 1, m = 0, n = 0, k = 0;
};

// The CPU's flags, read once.
bool cpu_has(const std::string& flag) {
  static const std::set<std::string> flags = [] {
    std::ifstream in("/proc/cpuinfo");
    std::set<std::string> words;
    for (std::string word; in >> word;) words.insert(word);
    return words;
  }();
  return flags.count(flag) > 0;
}

struct Operands {
  std::vector<std::uint8_t> a, b;  // u8 / s8 bytes, or bf16 bit patterns
  std::vector<float> scale, c;
  std::vector<std::int32_t> comp;
  int zero = 7;
};

std::uint16_t bf16_of_int(int v) {
  const float f = float(v);
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return std::uint16_t(u >> 16);
}

Operands make(const Entry& e) {
  std::mt19937 rng(1);
  Operands o;
  o.c.assign(std::size_t(e.batch * e.m * e.n), 0.0f);
  if (e.dtype == "int8") {
    std::uniform_int_distribution<int> ua(0, 255), ub(-127, 127);
    o.a.resize(std::size_t(e.batch * e.m * e.k));
    o.b.resize(std::size_t(e.batch * e.k * e.n));
    for (auto& x : o.a) x = std::uint8_t(ua(rng));
    for (auto& x : o.b) x = std::uint8_t(std::int8_t(ub(rng)));
    o.scale.assign(std::size_t(e.n), 1.0f / 256);
    o.comp.assign(std::size_t(e.batch * e.n), 0);  // per batch and column
    for (long b = 0; b < e.batch; ++b)
      for (long p = 0; p < e.k; ++p)
        for (long j = 0; j < e.n; ++j)
          o.comp[std::size_t(b * e.n + j)] += o.zero * std::int8_t(o.b[std::size_t((b * e.k + p) * e.n + j)]);
    return o;
  }
  std::uniform_int_distribution<int> small(-4, 4);
  o.a.resize(std::size_t(e.batch * e.m * e.k) * 2);
  o.b.resize(std::size_t(e.batch * e.k * e.n) * 2);
  for (std::size_t i = 0; i < o.a.size(); i += 2) {
    const std::uint16_t h = bf16_of_int(small(rng));
    std::memcpy(&o.a[i], &h, 2);
  }
  for (std::size_t i = 0; i < o.b.size(); i += 2) {
    const std::uint16_t h = bf16_of_int(small(rng));
    std::memcpy(&o.b[i], &h, 2);
  }
  return o;
}

AtvossArgs args_of(Operands& o) {
  AtvossArgs g{};
  g.c = o.c.data();
  g.qa = o.a.data();
  g.qb = o.b.data();
  g.qscale = o.scale.empty() ? nullptr : o.scale.data();
  g.qcomp = o.comp.empty() ? nullptr : o.comp.data();
  g.qzero = o.zero;
  return g;
}

int value(const Operands& o, const Entry& e, bool is_a, std::size_t i) {
  if (e.dtype == "int8") return is_a ? int(o.a[i]) : int(std::int8_t(o.b[i]));
  std::uint16_t h;
  std::memcpy(&h, &(is_a ? o.a : o.b)[i * 2], 2);
  const std::uint32_t u = std::uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return int(f);
}

// Wrong outputs over `rows` of each batch (all rows when rows is 0).
long wrong_outputs(const Operands& o, const Entry& e, long rows) {
  long wrong = 0;
  const long step = rows > 0 ? std::max(1L, e.m / rows) : 1;
  for (long b = 0; b < e.batch; ++b) {
    const std::size_t a0 = std::size_t(b * e.m * e.k), b0 = std::size_t(b * e.k * e.n), c0 = std::size_t(b * e.m * e.n);
    for (long i = 0; i < e.m; i += step) {
      for (long j = 0; j < e.n; ++j) {
        std::int64_t acc = 0;
        for (long p = 0; p < e.k; ++p)
          acc += std::int64_t(value(o, e, true, a0 + std::size_t(i * e.k + p))) *
                 value(o, e, false, b0 + std::size_t(p * e.n + j));
        const float want = e.dtype == "int8"
                               ? o.scale[std::size_t(j)] * float(std::int32_t(acc - o.comp[std::size_t(b * e.n + j)]))
                               : float(acc);
        const float got = o.c[c0 + std::size_t(i * e.n + j)];
        if (std::memcmp(&want, &got, 4) != 0) ++wrong;
      }
    }
  }
  return wrong;
}

double median_us(KernelFn fn, const AtvossArgs& g) {
  using clock = std::chrono::steady_clock;
  auto window = [&](long inner) {
    const auto t0 = clock::now();
    for (long i = 0; i < inner; ++i) fn(&g);
    return std::chrono::duration<double, std::micro>(clock::now() - t0).count() / double(inner);
  };
  const double first = window(1);
  const long inner = std::max(1L, long(std::ceil(20000.0 / std::max(first, 1.0))));
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) t.push_back(window(inner));
  std::sort(t.begin(), t.end());
  return t[3];
}

std::vector<Entry> read_manifest(const std::string& dir) {
  std::ifstream in(dir + "/manifest.txt");
  std::vector<Entry> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream s(line);
    Entry e;
    s >> e.group >> e.name >> e.dtype >> e.batch >> e.m >> e.n >> e.k >> e.label;
    std::getline(s >> std::ws, e.schedule);
    out.push_back(e);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: lowp_check DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const std::vector<Entry> entries = read_manifest(dir);
  if (entries.empty()) {
    std::fprintf(stderr, "lowp_check: no kernels in %s/manifest.txt\n", dir.c_str());
    return 2;
  }
  int failed = 0;
  std::map<std::string, std::pair<double, std::string>> best;  // shape:dtype:unit -> (GOP/s, schedule)
  for (const Entry& e : entries) {
    const bool amx = e.schedule.find("\"amx_tiles\":1") != std::string::npos;
    const std::string flag =
        amx ? (e.dtype == "int8" ? "amx_int8" : "amx_bf16") : (e.dtype == "int8" ? "avx512_vnni" : "avx512_bf16");
    if (!cpu_has(flag)) {
      std::printf("%s %s skipped: this CPU has no %s\n", e.group.c_str(), e.name.c_str(), flag.c_str());
      continue;
    }
    void* h = ::dlopen((dir + "/" + e.name + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    auto fn = h ? reinterpret_cast<KernelFn>(::dlsym(h, "atvoss_kernel")) : nullptr;
    if (!fn) {
      std::printf("%s %s: cannot load: %s\n", e.group.c_str(), e.name.c_str(), ::dlerror());
      ++failed;
      continue;
    }
    Operands o = make(e);
    const AtvossArgs g = args_of(o);
    fn(&g);
    const long wrong = wrong_outputs(o, e, e.group == "check" ? 0 : 16);
    if (wrong > 0) ++failed;
    if (e.group == "check") {
      std::printf("check %s %s %ldx%ldx%ldx%ld %s: %s\n", e.name.c_str(), e.dtype.c_str(), e.batch, e.m, e.n, e.k,
                  e.schedule.c_str(), wrong ? (std::to_string(wrong) + " wrong outputs").c_str() : "ok");
    } else {
      const double us = median_us(fn, g), gops = 2e-3 * double(e.m) * double(e.n) * double(e.k) / us;
      std::printf("time %s %-8s %-24s %9.1f us %8.1f GOP/s%s %s\n", e.name.c_str(), e.dtype.c_str(), e.label.c_str(),
                  us, gops, wrong ? " WRONG" : "", e.schedule.c_str());
      auto& b = best[e.label + " " + e.dtype];
      if (gops > b.first) b = {gops, e.schedule};
    }
  }
  std::printf("best per shape, dtype and unit (GOP/s):\n");
  for (const auto& [key, b] : best) std::printf("  %-40s %8.1f  %s\n", key.c_str(), b.first, b.second.c_str());
  for (const auto& [key, b] : best) {
    const auto at = key.find(":amx ");
    if (at == std::string::npos) continue;
    const std::string other = key.substr(0, at) + ":vnni " + key.substr(at + 5);
    if (best.count(other))
      std::printf("  AMX / dot products %-30s %.2fx\n", (key.substr(0, at) + " " + key.substr(at + 5)).c_str(),
                  b.first / best[other].first);
  }
  std::printf("%s\n", failed ? "SOME CHECKS FAILED" : "all checks passed");
  return failed ? 1 : 0;
}
