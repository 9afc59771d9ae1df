/* C API of the atvoss model engine (engine/model.hpp, docs/engine.md): run a whole ONNX model on
 * this CPU with the schedules of a model plan tuned for it on this machine, or the defaults.
 * Link build/lib/libatvoss_engine.so (cc prog.c -I<atvoss> -Lbuild/lib -latvoss_engine); it
 * exports only these functions.
 *
 * Inputs and outputs are fp32 (an integer input's values as floats), dense, in ONNX's layout and
 * the shapes atvoss_model_tensor gives.
 * Errors: every function that can fail returns a status; on failure, if error is not NULL,
 * *error receives a malloc'd message naming the argument, file or node (free it with
 * atvoss_model_free_string). Nothing throws or aborts on bad input.
 * Threading: one run at a time per handle (it holds the activation arena); close it once. */
#ifndef ATVOSS_ENGINE_H
#define ATVOSS_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define ATVOSS_ENGINE_API __attribute__((visibility("default")))
#else
#define ATVOSS_ENGINE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atvoss_model atvoss_model;

typedef enum {
  ATVOSS_MODEL_OK = 0,
  ATVOSS_MODEL_BAD_INPUT = 1, /* a bad argument, model or plan (another CPU, model or weights) */
  ATVOSS_MODEL_NOT_FOUND = 2,
  ATVOSS_MODEL_IO = 3, /* a file that cannot be read, a kernel that cannot be loaded */
  ATVOSS_MODEL_CORRUPT = 4,
  ATVOSS_MODEL_INTERNAL = 5 /* anything else, e.g. a generated kernel that did not compile */
} atvoss_model_status;

/* plan_path: a model plan (a host job's "model_plan"), or NULL for the default schedules. batch:
 * bound to the inputs' symbolic dims (>= 1). threads: the cores the kernels run on (0: every
 * physical core). cache_dir: the host compile cache's root (NULL: $XDG_CACHE_HOME/atvoss).
 * Loading packs the weights and compiles (or loads) every kernel. */
ATVOSS_ENGINE_API atvoss_model_status atvoss_model_open(const char* onnx_path, const char* plan_path, int batch,
                                                        int threads, const char* cache_dir, atvoss_model** out,
                                                        char** error);

/* atvoss_model_open with named symbolic dims: dim_names[i] (e.g. "sequence_length") takes
 * dim_values[i] for i < n_dims; batch binds every other symbolic dim. A name no input has, or a
 * value below 1, is BAD_INPUT naming it. */
ATVOSS_ENGINE_API atvoss_model_status atvoss_model_open_dims(const char* onnx_path, const char* plan_path, int batch,
                                                             size_t n_dims, const char* const* dim_names,
                                                             const int64_t* dim_values, int threads,
                                                             const char* cache_dir, atvoss_model** out, char** error);
/* How many inputs (is_output 0) or outputs (is_output 1) the model has; 0 for a NULL handle. */
ATVOSS_ENGINE_API size_t atvoss_model_count(const atvoss_model* model, int is_output);

/* The name, rank and dims of input or output `index`: valid while the handle is open. */
ATVOSS_ENGINE_API atvoss_model_status atvoss_model_tensor(const atvoss_model* model, int is_output, size_t index,
                                                          const char** name, size_t* rank, const int64_t** dims,
                                                          char** error);

/* The ONNX element type of input `index` ("float", "int64", "int32" or "bool"), valid while the
 * handle is open; NULL for a NULL handle or an index out of range. An integer or bool input (token
 * ids, a mask) is passed to atvoss_model_run as floats holding its values (integers below 2^24
 * in magnitude; anything else is BAD_INPUT naming the input). */
ATVOSS_ENGINE_API const char* atvoss_model_input_type(const atvoss_model* model, size_t index);
/* inputs: atvoss_model_count(model, 0) pointers; outputs: atvoss_model_count(model, 1)
 * pointers, each written whole. */
ATVOSS_ENGINE_API atvoss_model_status atvoss_model_run(atvoss_model* model, const float* const* inputs,
                                                       float* const* outputs, char** error);

ATVOSS_ENGINE_API void atvoss_model_close(atvoss_model* model);
ATVOSS_ENGINE_API void atvoss_model_free_string(char* text);

#ifdef __cplusplus
}
#endif

#endif /* ATVOSS_ENGINE_H */
