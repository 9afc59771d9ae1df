/* C API of the atvoss runtime (runtime/runtime.hpp): run matmul, batch_matmul and conv2d
 * on this CPU with the schedule tuned for each shape, from a table exported for the host
 * target (`atvoss-db export-table --target host-...`). Link build/lib/libatvoss_runtime.so
 * (cc prog.c -Iatvoss -Lbuild/lib -latvoss_runtime); it exports only these functions.
 *
 * Operands are dense fp32, row-major: matmul A[M,K] B[K,N] C[M,N] (batches back to back);
 * conv2d NCHW input, K x C x R x S filters, N x K x OH x OW output. Epilogue operands:
 * bias/scale/shift one value per output column (matmul) or channel (conv); residual shaped
 * like the output.
 *
 * Errors: every function returns a status; on failure, if error is not NULL, *error receives
 * a malloc'd message naming the argument or file (free it with atvoss_runtime_free_string).
 * Nothing throws or aborts on bad input.
 * Threading: one handle may be used by many threads at once; close it once, after all calls.
 * docs/runtime.md says which schedule runs (exact, nearest, default) and why. */
#ifndef ATVOSS_RUNTIME_H
#define ATVOSS_RUNTIME_H

#include <stdint.h>

#if defined(__GNUC__)
#define ATVOSS_RUNTIME_API __attribute__((visibility("default")))
#else
#define ATVOSS_RUNTIME_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atvoss_runtime atvoss_runtime;

typedef enum {
  ATVOSS_RUNTIME_OK = 0,
  ATVOSS_RUNTIME_BAD_INPUT = 1, /* a bad argument or workload, or a table tuned on another CPU */
  ATVOSS_RUNTIME_NOT_FOUND = 2,
  ATVOSS_RUNTIME_IO = 3,      /* a file that cannot be read, a kernel that cannot be loaded */
  ATVOSS_RUNTIME_CORRUPT = 4, /* a table whose checksum or record count does not match */
  ATVOSS_RUNTIME_INTERNAL = 5 /* anything else, e.g. a generated kernel that did not compile */
} atvoss_runtime_status;

/* Which schedule ran: the table's entry for this shape, the entry of the nearest shape of the
 * same op/dtype/epilogue, or the host default (no entry, or its schedule is not valid here). */
typedef enum { ATVOSS_CHOICE_EXACT = 0, ATVOSS_CHOICE_NEAREST = 1, ATVOSS_CHOICE_DEFAULT = 2 } atvoss_choice_kind;

/* Flag of atvoss_runtime_open: a table tuned on another CPU is ignored (default schedules
 * run, and the choice's reason says why) instead of refused with ATVOSS_RUNTIME_BAD_INPUT. */
#define ATVOSS_RUNTIME_FOREIGN_TABLE_DEFAULTS 1u

/* The ops applied after the main op, and their operands (NULL where no op needs one).
 * Zero-initialise it: fields may be added at the end. */
typedef struct {
  const char* ops; /* comma-separated, in order, e.g. "bias,gelu"; NULL or "" for none */
  const float* bias;
  const float* scale; /* batchnorm folded to scale + shift */
  const float* shift;
  const float* residual; /* "add" */
  const float* qout;     /* "quantize" / "requantize": {scale, zero point} of the u8 grid, one per op in order */
  /* With "quantize" / "requantize" last, if not NULL: the output's u8 codes go here (laid out
   * as the output, one byte each), for the next int8 layer, and not the values to c, which
   * may then be NULL. */
  uint8_t* codes;
  const float* slope; /* "leaky_relu": each output channel's negative slope */
} atvoss_epilogue;

typedef struct {
  int64_t n, c, h, w, k, r, s, stride, pad;
} atvoss_conv2d_shape;

/* table_path: the exported table, or NULL for default schedules everywhere. cache_dir: the
 * host compile cache's root (NULL: the tuner's, $XDG_CACHE_HOME/atvoss). */
ATVOSS_RUNTIME_API atvoss_runtime_status atvoss_runtime_open(const char* table_path, const char* cache_dir,
                                                             unsigned flags, atvoss_runtime** out, char** error);

/* kind (may be NULL) receives the choice that ran. epilogue may be NULL. The first call of a
 * shape may compile its kernel (about a second) unless the compile cache holds it. */
ATVOSS_RUNTIME_API atvoss_runtime_status atvoss_runtime_matmul(atvoss_runtime* rt, const float* a, const float* b,
                                                               float* c, int64_t m, int64_t n, int64_t k,
                                                               const atvoss_epilogue* epilogue,
                                                               atvoss_choice_kind* kind, char** error);
ATVOSS_RUNTIME_API atvoss_runtime_status atvoss_runtime_batch_matmul(atvoss_runtime* rt, const float* a, const float* b,
                                                                     float* c, int64_t batch, int64_t m, int64_t n,
                                                                     int64_t k, const atvoss_epilogue* epilogue,
                                                                     atvoss_choice_kind* kind, char** error);
/* int8 and bf16 matmuls on CPUs with AVX-512 VNNI / BF16 (ATVOSS_RUNTIME_BAD_INPUT naming the
 * missing flag elsewhere); c is fp32. int8: a u8 [m,k] with zero point z, b s8 [k,n];
 * c[i,j] = scale[j] * (sum_p a[i,p] * b[p,j] - comp[j]), then the epilogue, where
 * scale[j] = scale_a * scale_b[j] and comp[j] = z * sum_p b[p,j]. bf16: a and b hold bf16 bit
 * patterns (the upper half of an IEEE float), accumulated in fp32. */
ATVOSS_RUNTIME_API atvoss_runtime_status atvoss_runtime_matmul_int8(atvoss_runtime* rt, const uint8_t* a,
                                                                    const int8_t* b, float* c, const float* scale,
                                                                    const int32_t* comp, int64_t m, int64_t n,
                                                                    int64_t k, const atvoss_epilogue* epilogue,
                                                                    atvoss_choice_kind* kind, char** error);
ATVOSS_RUNTIME_API atvoss_runtime_status atvoss_runtime_matmul_bf16(atvoss_runtime* rt, const uint16_t* a,
                                                                    const uint16_t* b, float* c, int64_t m, int64_t n,
                                                                    int64_t k, const atvoss_epilogue* epilogue,
                                                                    atvoss_choice_kind* kind, char** error);
/* Runs where the host code generator serves conv2d; ATVOSS_RUNTIME_BAD_INPUT naming the op
 * otherwise. */
ATVOSS_RUNTIME_API atvoss_runtime_status atvoss_runtime_conv2d(atvoss_runtime* rt, const float* input,
                                                               const float* filter, float* output,
                                                               const atvoss_conv2d_shape* shape,
                                                               const atvoss_epilogue* epilogue,
                                                               atvoss_choice_kind* kind, char** error);

/* int8 and bf16 conv2d (NHWC input, HWIO filter), the int8 and bf16 matmuls of the implicit GEMM
 * pixels x (r*s*c) x k: int8 input u8 with zero point z in [0, 255] (padding is z, i.e. 0.0),
 * filter s8; output[p,k] = scale[k] * (sum a*b - comp[k]), then the epilogue, where
 * comp[k] = z * sum over r, s, c of filter[r,s,c,k]. bf16: bit patterns, fp32 accumulation. */
ATVOSS_RUNTIME_API atvoss_runtime_status
atvoss_runtime_conv2d_int8(atvoss_runtime* rt, const uint8_t* input, int32_t zero_point, const int8_t* filter,
                           float* output, const float* scale, const int32_t* comp, const atvoss_conv2d_shape* shape,
                           const atvoss_epilogue* epilogue, atvoss_choice_kind* kind, char** error);
ATVOSS_RUNTIME_API atvoss_runtime_status atvoss_runtime_conv2d_bf16(atvoss_runtime* rt, const uint16_t* input,
                                                                    const uint16_t* filter, float* output,
                                                                    const atvoss_conv2d_shape* shape,
                                                                    const atvoss_epilogue* epilogue,
                                                                    atvoss_choice_kind* kind, char** error);

/* A conv2d's filter prepared once for the kernel this runtime runs for that conv (its shape,
 * epilogue and dtype): packed as the kernel lays its weights out (or copied, where its schedule
 * reads them in place), as an inference runtime packs constant weights at load. The *_prepared
 * calls take it instead of a filter, pack nothing and never read the filter again; a conv other
 * than the one it was prepared for is ATVOSS_RUNTIME_BAD_INPUT naming 'filter'. Free it with
 * atvoss_runtime_free_conv2d_weights (after its last call; it does not outlive rt). */
typedef struct atvoss_conv2d_weights atvoss_conv2d_weights;
ATVOSS_RUNTIME_API atvoss_runtime_status atvoss_runtime_prepare_conv2d_weights(atvoss_runtime* rt, const float* filter,
                                                                               const atvoss_conv2d_shape* shape,
                                                                               const atvoss_epilogue* epilogue,
                                                                               atvoss_conv2d_weights** out,
                                                                               char** error);
ATVOSS_RUNTIME_API atvoss_runtime_status
atvoss_runtime_prepare_conv2d_int8_weights(atvoss_runtime* rt, const int8_t* filter, const atvoss_conv2d_shape* shape,
                                           const atvoss_epilogue* epilogue, atvoss_conv2d_weights** out, char** error);
ATVOSS_RUNTIME_API atvoss_runtime_status
atvoss_runtime_prepare_conv2d_bf16_weights(atvoss_runtime* rt, const uint16_t* filter, const atvoss_conv2d_shape* shape,
                                           const atvoss_epilogue* epilogue, atvoss_conv2d_weights** out, char** error);
ATVOSS_RUNTIME_API atvoss_runtime_status atvoss_runtime_conv2d_prepared(atvoss_runtime* rt, const float* input,
                                                                        const atvoss_conv2d_weights* filter,
                                                                        float* output, const atvoss_conv2d_shape* shape,
                                                                        const atvoss_epilogue* epilogue,
                                                                        atvoss_choice_kind* kind, char** error);
ATVOSS_RUNTIME_API atvoss_runtime_status atvoss_runtime_conv2d_int8_prepared(
    atvoss_runtime* rt, const uint8_t* input, int32_t zero_point, const atvoss_conv2d_weights* filter, float* output,
    const float* scale, const int32_t* comp, const atvoss_conv2d_shape* shape, const atvoss_epilogue* epilogue,
    atvoss_choice_kind* kind, char** error);
ATVOSS_RUNTIME_API atvoss_runtime_status atvoss_runtime_conv2d_bf16_prepared(
    atvoss_runtime* rt, const uint16_t* input, const atvoss_conv2d_weights* filter, float* output,
    const atvoss_conv2d_shape* shape, const atvoss_epilogue* epilogue, atvoss_choice_kind* kind, char** error);
/* NULL is ignored. */
ATVOSS_RUNTIME_API void atvoss_runtime_free_conv2d_weights(atvoss_conv2d_weights* weights);

/* The choice for a workload given as JSON ({"op":"matmul","dtype":"float32","dims":{...},
 * "epilogue":[...]}), as JSON {"kind":"exact"|"nearest"|"default","schedule":{...},
 * "reason":"...","entry":{...}|null,"distance":d,"table_time_us":t}, into *choice_json
 * (malloc'd; free with atvoss_runtime_free_string). Compiles nothing. */
ATVOSS_RUNTIME_API atvoss_runtime_status atvoss_runtime_choice(atvoss_runtime* rt, const char* workload_json,
                                                               char** choice_json, char** error);

ATVOSS_RUNTIME_API void atvoss_runtime_free_string(char* text);

/* NULL is ignored. */
ATVOSS_RUNTIME_API void atvoss_runtime_close(atvoss_runtime* rt);

#ifdef __cplusplus
}
#endif

#endif /* ATVOSS_RUNTIME_H */
