/* The runtime's C API from a C program linked against libatvoss_runtime.so. argv[1]: a host
 * table of this CPU, argv[2]: the same table tuned on "another CPU" (both written by
 * helpers/make_table.cpp; entries in runtime_test_util.hpp: matmul 48x40x64 fp32 is tuned).
 * Exit 0 when every check passes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/atvoss_runtime.h"

static int failures = 0;

static void check(int ok, const char* what, const char* detail) {
  if (!ok) {
    ++failures;
    fprintf(stderr, "FAILED: %s (%s)\n", what, detail ? detail : "");
  }
}

/* C = A B (+ bias per column), compared with a double-precision loop. */
static double max_error(const float* a, const float* b, const float* bias, const float* c, int m, int n, int k) {
  double worst = 0;
  int i, j, p;
  for (i = 0; i < m; ++i) {
    for (j = 0; j < n; ++j) {
      double ref = bias ? bias[j] : 0.0, err;
      for (p = 0; p < k; ++p) ref += (double)a[i * k + p] * b[p * n + j];
      err = fabs(c[i * n + j] - ref) / (fabs(ref) > 1 ? fabs(ref) : 1);
      if (err > worst) worst = err;
    }
  }
  return worst;
}

static void fill(float* v, int count, int seed) {
  int i;
  for (i = 0; i < count; ++i) v[i] = (float)((i * 37 + seed * 11) % 19) / 9.0f - 1.0f;
}

/* Runs m x n x k through rt and checks the kind that ran and the result. */
static void expect_matmul(atvoss_runtime* rt, int m, int n, int k, int with_bias, atvoss_choice_kind want,
                          const char* what) {
  float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n);
  float *c = calloc((size_t)m * n, sizeof(float)), *bias = malloc(sizeof(float) * n);
  atvoss_epilogue epilogue = {.ops = "bias"};
  atvoss_choice_kind kind = ATVOSS_CHOICE_EXACT;
  char* error = NULL;
  atvoss_runtime_status st;
  fill(a, m * k, 1);
  fill(b, k * n, 2);
  fill(bias, n, 3);
  epilogue.bias = bias;
  st = atvoss_runtime_matmul(rt, a, b, c, m, n, k, with_bias ? &epilogue : NULL, &kind, &error);
  check(st == ATVOSS_RUNTIME_OK, what, error);
  check(kind == want, what, "wrong choice kind");
  check(max_error(a, b, with_bias ? bias : NULL, c, m, n, k) <= 1e-4, what, "result differs from the reference");
  atvoss_runtime_free_string(error);
  free(a);
  free(b);
  free(c);
  free(bias);
}

/* The int8 matmul ending in requantize writes the u8 codes of the exact result `exact` on the
 * grid {1024, 128} (a power-of-two scale: the codes are exact too), with c NULL. */
static void expect_u8_codes(atvoss_runtime* rt, const uint8_t* a8, const int8_t* b8, const float* scale,
                            const int32_t* comp, const float* exact, int m, int n, int k) {
  const float qout[2] = {1024.0f, 128.0f};
  uint8_t codes[256];
  atvoss_epilogue e;
  char* error = NULL;
  int i, wrong = 0;
  atvoss_runtime_status st;
  memset(&e, 0, sizeof e);
  e.ops = "requantize";
  e.qout = qout;
  e.codes = codes;
  check(m * n <= 256, "u8 codes", "the test's buffer is too small");
  st = atvoss_runtime_matmul_int8(rt, a8, b8, NULL, scale, comp, m, n, k, &e, NULL, &error);
  check(st == ATVOSS_RUNTIME_OK, "int8 matmul with u8 codes runs", error);
  atvoss_runtime_free_string(error);
  for (i = 0; i < m * n; ++i) {
    double q = exact[i] / 1024.0 + 128.0;
    q = q < 0.0 ? 0.0 : q > 255.0 ? 255.0 : q;
    if (codes[i] != (uint8_t)(q + 0.5)) wrong = 1;
  }
  check(wrong == 0, "int8 matmul's u8 codes", "a code differs from the exact result's");
}

/* int8 and bf16 from small integers, so that the result is exact; a CPU without the
 * instructions must refuse naming the flag, and the output says it skipped. */
static void expect_low_precision(atvoss_runtime* rt) {
  enum { M = 5, N = 20, K = 9 };
  uint8_t a8[M * K];
  int8_t b8[K * N];
  uint16_t a16[M * K], b16[K * N];
  float c[M * N], scale[N], fa[M * K], fb[K * N];
  int32_t comp[N];
  char* error = NULL;
  int i, j, p, worst = 0;
  atvoss_runtime_status st;
  for (i = 0; i < M * K; ++i) {
    a8[i] = (uint8_t)((i * 7) % 256);
    fa[i] = (float)(i % 5 - 2);
    memcpy(&a16[i], (const char*)&fa[i] + 2, 2); /* little-endian: the upper half */
  }
  for (i = 0; i < K * N; ++i) {
    b8[i] = (int8_t)((i * 5) % 255 - 127);
    fb[i] = (float)(i % 3 - 1);
    memcpy(&b16[i], (const char*)&fb[i] + 2, 2);
  }
  for (j = 0; j < N; ++j) {
    scale[j] = 0.5f;
    comp[j] = 0;
    for (p = 0; p < K; ++p) comp[j] += 3 * b8[p * N + j];
  }
  st = atvoss_runtime_matmul_int8(rt, a8, b8, c, scale, comp, M, N, K, NULL, NULL, &error);
  if (st == ATVOSS_RUNTIME_BAD_INPUT && error != NULL && strstr(error, "avx512_vnni") != NULL) {
    printf("skipped int8: %s\n", error);
  } else {
    check(st == ATVOSS_RUNTIME_OK, "int8 matmul runs", error);
    for (i = 0; i < M; ++i)
      for (j = 0; j < N; ++j) {
        int32_t acc = -comp[j];
        for (p = 0; p < K; ++p) acc += a8[i * K + p] * b8[p * N + j];
        if (c[i * N + j] != 0.5f * (float)acc) worst = 1;
      }
    check(worst == 0, "int8 matmul", "result differs from the exact integer result");
    expect_u8_codes(rt, a8, b8, scale, comp, c, M, N, K);
  }
  atvoss_runtime_free_string(error);
  error = NULL;
  st = atvoss_runtime_matmul_bf16(rt, a16, b16, c, M, N, K, NULL, NULL, &error);
  if (st == ATVOSS_RUNTIME_BAD_INPUT && error != NULL && strstr(error, "avx512_bf16") != NULL) {
    printf("skipped bf16: %s\n", error);
  } else {
    check(st == ATVOSS_RUNTIME_OK, "bf16 matmul runs", error);
    check(max_error(fa, fb, NULL, c, M, N, K) == 0, "bf16 matmul", "result differs from the exact result");
  }
  atvoss_runtime_free_string(error);
  error = NULL;
  st = atvoss_runtime_matmul_int8(rt, a8, b8, c, scale, NULL, M, N, K, NULL, NULL, &error);
  check(st == ATVOSS_RUNTIME_BAD_INPUT && error != NULL, "int8 without compensation refused", error);
  atvoss_runtime_free_string(error);
}

/* The filter prepared once gives the per-call output `want` exactly, with the caller's filter
 * overwritten after preparing; another conv (stride 2) refuses it naming 'filter'. */
static void expect_prepared_int8_conv(atvoss_runtime* rt, const atvoss_conv2d_shape* shape, const uint8_t* in,
                                      int32_t z, int8_t* f, size_t f_bytes, const float* scale, const int32_t* comp,
                                      const float* want) {
  enum { OUT = 4 * 4 * 16 };
  atvoss_conv2d_weights* w = NULL;
  atvoss_conv2d_shape strided = *shape;
  float out[OUT];
  char* error = NULL;
  atvoss_runtime_status st = atvoss_runtime_prepare_conv2d_int8_weights(rt, f, shape, NULL, &w, &error);
  check(st == ATVOSS_RUNTIME_OK && w != NULL, "int8 conv2d weights prepared", error);
  atvoss_runtime_free_string(error);
  error = NULL;
  memset(f, 0x7f, f_bytes);
  memset(out, 0, sizeof out);
  st = atvoss_runtime_conv2d_int8_prepared(rt, in, z, w, out, scale, comp, shape, NULL, NULL, &error);
  check(st == ATVOSS_RUNTIME_OK && memcmp(out, want, sizeof out) == 0, "prepared int8 conv2d gives the per-call output",
        error);
  atvoss_runtime_free_string(error);
  error = NULL;
  strided.stride = 2;
  st = atvoss_runtime_conv2d_int8_prepared(rt, in, z, w, out, scale, comp, &strided, NULL, NULL, &error);
  check(st == ATVOSS_RUNTIME_BAD_INPUT && error != NULL && strstr(error, "'filter'") != NULL,
        "weights prepared for another conv refused", error);
  atvoss_runtime_free_string(error);
  atvoss_runtime_free_conv2d_weights(w);
}

/* An int8 conv2d (3x3, pad 1, a 4x4 image of 5 channels, 16 filters) from small integers with
 * zero point 3: exact, the padding counting as 3 (that is, as 0.0). */
static void expect_int8_conv(atvoss_runtime* rt) {
  enum { H = 4, W = 4, C = 5, K = 16, Z = 3 };
  const atvoss_conv2d_shape shape = {1, C, H, W, K, 3, 3, 1, 1};
  uint8_t in[H * W * C];
  int8_t f[9 * C * K];
  float out[H * W * K], scale[K];
  int32_t comp[K];
  char* error = NULL;
  int i, k, y, x, r, s, c, worst = 0;
  atvoss_runtime_status st;
  for (i = 0; i < H * W * C; ++i) in[i] = (uint8_t)((i * 7) % 11);
  for (i = 0; i < 9 * C * K; ++i) f[i] = (int8_t)((i * 5) % 9 - 4);
  for (k = 0; k < K; ++k) {
    scale[k] = 0.25f;
    comp[k] = 0;
    for (i = 0; i < 9 * C; ++i) comp[k] += Z * f[i * K + k];
  }
  st = atvoss_runtime_conv2d_int8(rt, in, Z, f, out, scale, comp, &shape, NULL, NULL, &error);
  if (st == ATVOSS_RUNTIME_BAD_INPUT && error != NULL && strstr(error, "avx512_vnni") != NULL) {
    printf("skipped int8 conv2d: %s\n", error);
  } else {
    check(st == ATVOSS_RUNTIME_OK, "int8 conv2d runs", error);
    for (y = 0; y < H; ++y)
      for (x = 0; x < W; ++x)
        for (k = 0; k < K; ++k) {
          int32_t acc = 0;
          for (r = 0; r < 3; ++r)
            for (s = 0; s < 3; ++s)
              for (c = 0; c < C; ++c) {
                const int iy = y - 1 + r, ix = x - 1 + s;
                const int a = iy >= 0 && iy < H && ix >= 0 && ix < W ? in[(iy * W + ix) * C + c] : Z;
                acc += (a - Z) * f[((r * 3 + s) * C + c) * K + k];
              }
          if (out[(y * W + x) * K + k] != 0.25f * (float)acc) worst = 1;
        }
    check(worst == 0, "int8 conv2d", "result differs from the exact integer result");
    expect_prepared_int8_conv(rt, &shape, in, Z, f, sizeof f, scale, comp, out);
  }
  atvoss_runtime_free_string(error);
  error = NULL;
  st = atvoss_runtime_conv2d_int8(rt, in, Z, f, out, scale, comp, NULL, NULL, NULL, &error);
  check(st == ATVOSS_RUNTIME_BAD_INPUT && error != NULL && strstr(error, "shape") != NULL,
        "int8 conv2d without a shape refused", error);
  atvoss_runtime_free_string(error);
}

int main(int argc, char** argv) {
  atvoss_runtime* rt = NULL;
  atvoss_runtime* other = NULL;
  char* error = NULL;
  char* json = NULL;
  atvoss_runtime_status st;
  float x[4] = {0};
  if (argc < 3) {
    fprintf(stderr, "usage: %s this-cpu-table.json other-cpu-table.json\n", argv[0]);
    return 2;
  }
  st = atvoss_runtime_open(argv[1], NULL, 0, &rt, &error);
  check(st == ATVOSS_RUNTIME_OK && rt != NULL, "open this CPU's table", error);
  atvoss_runtime_free_string(error);
  if (rt == NULL) return 1;

  expect_matmul(rt, 48, 40, 64, 0, ATVOSS_CHOICE_EXACT, "tuned shape runs exact");
  expect_matmul(rt, 40, 40, 64, 0, ATVOSS_CHOICE_NEAREST, "nearby shape runs nearest");
  expect_matmul(rt, 13, 21, 30, 1, ATVOSS_CHOICE_DEFAULT, "matmul+bias has no entry: default");
  expect_low_precision(rt);
  expect_int8_conv(rt);

  st = atvoss_runtime_choice(rt, "{\"op\":\"matmul\",\"dtype\":\"float32\",\"dims\":{\"M\":48,\"N\":40,\"K\":64}}",
                             &json, &error);
  check(st == ATVOSS_RUNTIME_OK && json != NULL && strstr(json, "\"kind\":\"exact\"") != NULL, "choice as JSON",
        json ? json : error);
  atvoss_runtime_free_string(json);
  atvoss_runtime_free_string(error);

  st = atvoss_runtime_matmul(rt, x, NULL, x, 2, 2, 2, NULL, NULL, &error);
  check(st == ATVOSS_RUNTIME_BAD_INPUT && error != NULL && strstr(error, "'b'") != NULL, "null b refused", error);
  atvoss_runtime_free_string(error);
  st = atvoss_runtime_matmul(NULL, x, x, x, 2, 2, 2, NULL, NULL, &error);
  check(st == ATVOSS_RUNTIME_BAD_INPUT && error != NULL, "null handle refused", error);
  atvoss_runtime_free_string(error);
  st = atvoss_runtime_choice(rt, "not json", &json, &error);
  check(st == ATVOSS_RUNTIME_BAD_INPUT && json == NULL && error != NULL, "bad workload JSON refused", error);
  atvoss_runtime_free_string(error);
  atvoss_runtime_close(rt);

  st = atvoss_runtime_open(argv[2], NULL, 0, &other, &error);
  check(st == ATVOSS_RUNTIME_BAD_INPUT && other == NULL, "another CPU's table refused", error);
  check(error != NULL && strstr(error, "host-000000000000") != NULL, "refusal names the table's CPU", error);
  atvoss_runtime_free_string(error);
  st = atvoss_runtime_open(argv[2], NULL, ATVOSS_RUNTIME_FOREIGN_TABLE_DEFAULTS, &other, &error);
  check(st == ATVOSS_RUNTIME_OK && other != NULL, "another CPU's table with defaults", error);
  atvoss_runtime_free_string(error);
  if (other != NULL) expect_matmul(other, 48, 40, 64, 0, ATVOSS_CHOICE_DEFAULT, "foreign table runs the default");
  atvoss_runtime_close(other);

  st = atvoss_runtime_open("/nonexistent/table.json", NULL, 0, &other, &error);
  check(st == ATVOSS_RUNTIME_IO && other == NULL, "missing table refused", error);
  check(error != NULL && strstr(error, "/nonexistent/table.json") != NULL, "missing table named", error);
  atvoss_runtime_free_string(error);
  check(atvoss_runtime_open(NULL, NULL, 0, NULL, NULL) == ATVOSS_RUNTIME_BAD_INPUT, "NULL out refused", NULL);
  atvoss_runtime_close(NULL);

  if (failures == 0) printf("atvoss_runtime C API: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
