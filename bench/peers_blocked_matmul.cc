// A blocked fp32 matmul C = A B (N x N, row-major) written for the Kernel Tuner comparison
// (bench/peers_host_matmul.py): Kernel Tuner's C backend compiles it with g++ once per
// configuration, the knobs arriving as #defines, and calls it through ctypes; the function
// times itself and returns milliseconds, as that backend expects.
// Knobs: BLOCK_I x BLOCK_K x BLOCK_J tiles (rows of A and C, the shared dimension, columns of
// B and C) and UNROLL_K, how many rows of B each pass over a row of C's tile accumulates in a
// register (fewer loads and stores of C per multiply-add).
#include <string.h>
#include <time.h>

#define ATVOSS_STR(x) #x
#define ATVOSS_UNROLL(n) _Pragma(ATVOSS_STR(GCC unroll n))

static void tile(float* __restrict C, const float* __restrict A, const float* __restrict B, int ii, int kk, int jj) {
  for (int i = ii; i < ii + BLOCK_I; ++i) {
    float* __restrict c = C + i * N + jj;
    for (int k = kk; k < kk + BLOCK_K; k += UNROLL_K) {
      float a[UNROLL_K];
      for (int u = 0; u < UNROLL_K; ++u) a[u] = A[i * N + k + u];
      const float* __restrict b = B + k * N + jj;
      for (int j = 0; j < BLOCK_J; ++j) {
        float s = c[j];
        ATVOSS_UNROLL(UNROLL_K)
        for (int u = 0; u < UNROLL_K; ++u) s += a[u] * b[u * N + j];
        c[j] = s;
      }
    }
  }
}

extern "C" float blocked_matmul(float* C, const float* A, const float* B) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  memset(C, 0, sizeof(float) * N * N);
  for (int ii = 0; ii < N; ii += BLOCK_I)
    for (int kk = 0; kk < N; kk += BLOCK_K)
      for (int jj = 0; jj < N; jj += BLOCK_J) tile(C, A, B, ii, kk, jj);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (float)((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6);
}
