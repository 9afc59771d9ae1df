/* The engine's C API (engine/atvoss_engine.h) from a C99 program linked against the shared
 * library only: a model with a symbolic batch opens at batch 2, names its tensors, runs, and
 * writes 2 * relu(x); NULL handles and arguments, a missing file, a bad batch and a damaged plan
 * return BAD_INPUT with a message naming what is wrong. Prints "N passed, N failed". */
#include <stdio.h>
#include <string.h>

#include "engine/atvoss_engine.h"

static int passed = 0, failed = 0;

static void check(int ok, const char* what) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    printf("FAILED: %s\n", what);
  }
}

/* A call's status and message: BAD_INPUT, with a message holding `says`. */
static void refused(atvoss_model_status s, char* error, const char* says, const char* what) {
  check(s == ATVOSS_MODEL_BAD_INPUT, what);
  check(error != NULL && strstr(error, says) != NULL, what);
  if (error != NULL) printf("  %s: %s\n", what, error);
  atvoss_model_free_string(error);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    printf("usage: %s MODEL.onnx BAD-PLAN.json\n", argv[0]);
    return 2;
  }
  atvoss_model* m = NULL;
  char* error = NULL;
  atvoss_model_status s = atvoss_model_open(argv[1], NULL, 2, 0, NULL, &m, &error);
  check(s == ATVOSS_MODEL_OK && m != NULL, "open");
  if (error) printf("  open: %s\n", error);
  atvoss_model_free_string(error);
  error = NULL;
  check(atvoss_model_count(m, 0) == 1 && atvoss_model_count(m, 1) == 1, "one input, one output");
  const char* name = NULL;
  size_t rank = 0;
  const int64_t* dims = NULL;
  s = atvoss_model_tensor(m, 0, 0, &name, &rank, &dims, &error);
  check(s == ATVOSS_MODEL_OK && strcmp(name, "x") == 0 && rank == 2 && dims[0] == 2 && dims[1] == 3,
        "input x of shape [2, 3] (the batch bound)");
  s = atvoss_model_tensor(m, 1, 0, &name, &rank, &dims, &error);
  check(s == ATVOSS_MODEL_OK && strcmp(name, "y") == 0 && rank == 2, "output y");
  const float x[6] = {-1.0f, 0.5f, 2.0f, -3.0f, 0.0f, 1.25f};
  float y[6] = {0};
  const float* inputs[1] = {x};
  float* outputs[1] = {y};
  s = atvoss_model_run(m, inputs, outputs, &error);
  check(s == ATVOSS_MODEL_OK, "run");
  int equal = 1;
  for (int i = 0; i < 6; ++i) equal = equal && y[i] == (x[i] > 0 ? 2 * x[i] : 0.0f);
  check(equal, "y = 2 * relu(x)");

  error = NULL;
  s = atvoss_model_tensor(m, 0, 5, &name, &rank, &dims, &error);
  refused(s, error, "'index' 5 of 1 inputs", "index");
  error = NULL;
  s = atvoss_model_run(m, NULL, outputs, &error);
  refused(s, error, "'inputs'", "NULL inputs");
  error = NULL;
  s = atvoss_model_run(NULL, inputs, outputs, &error);
  refused(s, error, "handle is NULL", "NULL handle");
  check(atvoss_model_count(NULL, 0) == 0, "count of NULL");
  atvoss_model_close(m);

  atvoss_model* other = NULL;
  error = NULL;
  s = atvoss_model_open("/no/such/model.onnx", NULL, 1, 0, NULL, &other, &error);
  refused(s, error, "model.onnx", "missing file");
  check(other == NULL, "no handle after a failure");
  error = NULL;
  s = atvoss_model_open(argv[1], NULL, 0, 0, NULL, &other, &error);
  refused(s, error, "'batch'", "batch 0");
  error = NULL;
  s = atvoss_model_open(argv[1], argv[2], 1, 0, NULL, &other, &error);
  refused(s, error, "field 'format'", "bad plan");
  error = NULL;
  s = atvoss_model_open(NULL, NULL, 1, 0, NULL, &other, &error);
  refused(s, error, "'onnx_path'", "NULL path");

  /* Named dims: "N" by name over the batch; a name no input has is refused naming it. */
  const char* names[1] = {"N"};
  const int64_t values[1] = {4};
  error = NULL;
  s = atvoss_model_open_dims(argv[1], NULL, 1, 1, names, values, 0, NULL, &other, &error);
  check(s == ATVOSS_MODEL_OK && other != NULL, "open with a named dim");
  atvoss_model_free_string(error);
  error = NULL;
  s = atvoss_model_tensor(other, 0, 0, &name, &rank, &dims, &error);
  check(s == ATVOSS_MODEL_OK && dims[0] == 4, "N bound by name to 4");
  check(atvoss_model_input_type(other, 0) != NULL && strcmp(atvoss_model_input_type(other, 0), "float") == 0,
        "input type float");
  check(atvoss_model_input_type(other, 3) == NULL && atvoss_model_input_type(NULL, 0) == NULL, "no type out of range");
  atvoss_model_close(other);
  other = NULL;
  const char* unknown[1] = {"sequence_length"};
  s = atvoss_model_open_dims(argv[1], NULL, 1, 1, unknown, values, 0, NULL, &other, &error);
  refused(s, error, "'sequence_length'", "a dim no input has");
  error = NULL;
  s = atvoss_model_open_dims(argv[1], NULL, 1, 1, NULL, values, 0, NULL, &other, &error);
  refused(s, error, "'dim_names'", "NULL dim names");
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
