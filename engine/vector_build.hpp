// How the engine's plain ops build their hot loops. The library is built for the x86-64
// baseline (SSE2); each hot loop is compiled a second time for AVX-512 (x86-64-v4) and chosen
// at run time, as ONNX Runtime's kernels are: a body inlined into two functions of internal
// linkage (ATVOSS_BUILT_TWICE, used inside an unnamed namespace), so no out-of-line copy built
// for AVX-512 can stand in for a baseline one (docs/decisions/engine-third-cut.md). The larger
// loops split their rows over the caller's threads (OpenMP). Included by the engine's .cpp
// files only.
#pragma once

#include <algorithm>
#include <cstdint>

namespace atvoss::engine::loops {

#if defined(__x86_64__) && defined(__GNUC__)
#define ATVOSS_V4 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,bmi,bmi2,f16c")))
inline bool has_v4() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("bmi2");
  return yes;
}
#else
#define ATVOSS_V4
inline inline bool has_v4() { return false; }
#endif
#define ATVOSS_INLINE inline __attribute__((always_inline))

// [0, n) split into one range per thread, f(begin, end) on each, where each thread gets at least
// `grain` items (a parallel region costs about as much as a few thousand elements' work).
template <class F>
void split(std::int64_t n, std::int64_t grain, int threads, F f) {
  const std::int64_t parts = std::min<std::int64_t>(threads, n / std::max<std::int64_t>(grain, 1));
  if (parts <= 1) {
    f(std::int64_t(0), n);
    return;
  }
#pragma omp parallel for num_threads(int(parts)) schedule(static)
  for (std::int64_t t = 0; t < parts; ++t) f(n * t / parts, n * (t + 1) / parts);
}

inline constexpr std::int64_t kGrain = 16384;  // elements per thread at least
// The grain of a split over rows of len elements: kGrain elements a thread.
inline std::int64_t rows_grain(std::int64_t len) {
  return std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(len, 1));
}

// name##_body(args) built for the baseline (name##_base) and for AVX-512 (name##_v4);
// name##_here() is the one this CPU runs.
#define ATVOSS_BUILT_TWICE(name, params, args)          \
  void name##_base params { name##_body args; }         \
  ATVOSS_V4 void name##_v4 params { name##_body args; } \
  auto name##_here() { return has_v4() ? &name##_v4 : &name##_base; }

// GCC's vector types, 16 lanes: an AVX-512 register in the AVX-512 build, four SSE registers in
// the baseline one. Locals only: as a parameter or result their ABI depends on AVX-512.
typedef float Vec16 __attribute__((vector_size(64)));
typedef int Vec16i __attribute__((vector_size(64)));

}  // namespace atvoss::engine::loops
