/* The runtime table's C API, called from C as a compiler written in C would (argv[1]: the
 * checked-in fixture tests/db/data/table_small.json, whose entries are matmul 1024x1024x1024
 * and 64x64x64 float16 on target "npu-fixture"). Exit 0 when every check passes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/table/atvoss_table.h"

static int failures = 0;

static void check(int ok, const char* what, const char* detail) {
  if (!ok) {
    ++failures;
    fprintf(stderr, "FAILED: %s (%s)\n", what, detail ? detail : "");
  }
}

/* A lookup that succeeds, and whose JSON holds needle. */
static void expect_lookup(const atvoss_table* t, const char* workload, const char* needle) {
  char* result = NULL;
  char* error = NULL;
  atvoss_table_status status = atvoss_table_lookup(t, workload, &result, &error);
  check(status == ATVOSS_TABLE_OK && result != NULL, "lookup succeeds", error ? error : workload);
  if (result != NULL) check(strstr(result, needle) != NULL, needle, result);
  atvoss_table_free_string(result);
  atvoss_table_free_string(error);
}

/* A lookup that fails with status, no result, and a message holding needle. */
static void expect_refused(const atvoss_table* t, const char* workload, atvoss_table_status status,
                           const char* needle) {
  char* result = NULL;
  char* error = NULL;
  check(atvoss_table_lookup(t, workload, &result, &error) == status, "the status of a refused lookup", needle);
  check(result == NULL, "no result when refused", result);
  check(error != NULL && strstr(error, needle) != NULL, needle, error);
  atvoss_table_free_string(result);
  atvoss_table_free_string(error);
}

int main(int argc, char** argv) {
  char* error = NULL;
  char* result = NULL;
  atvoss_table* t = NULL;
  atvoss_table* missing = (atvoss_table*)&failures; /* must be reset to NULL on failure */
  if (argc < 2) {
    fprintf(stderr, "usage: %s table.json\n", argv[0]);
    return 2;
  }
  check(atvoss_table_open(argv[1], &t, &error) == ATVOSS_TABLE_OK && t != NULL, "open the fixture", error);
  atvoss_table_free_string(error);
  if (t == NULL) return 1;
  check(atvoss_table_size(t) == 2, "two entries", NULL);

  expect_lookup(t, "{\"op\":\"matmul\",\"dims\":{\"M\":1024,\"N\":1024,\"K\":1024}}", "\"match\":\"exact\"");
  expect_lookup(t, "{\"op\":\"matmul\",\"dims\":{\"M\":1024,\"N\":1024,\"K\":1024}}", "\"tile_m\":128");
  expect_lookup(t, "{\"op\":\"matmul\",\"dims\":{\"M\":900,\"N\":1024,\"K\":1024}}", "\"match\":\"nearest\"");
  expect_lookup(t, "{\"op\":\"matmul\",\"dtype\":\"int8\",\"dims\":{\"M\":64,\"N\":64,\"K\":64}}",
                "\"match\":\"none\"");
  expect_refused(t, "{\"op\":\"matmul\",\"dims\":{\"M\":-4}}", ATVOSS_TABLE_BAD_INPUT, "M");
  expect_refused(t, "not json", ATVOSS_TABLE_BAD_INPUT, "workload");
  expect_refused(NULL, "{}", ATVOSS_TABLE_BAD_INPUT, "'table'");
  expect_refused(t, NULL, ATVOSS_TABLE_BAD_INPUT, "'workload_json'");
  check(atvoss_table_lookup(t, "{}", NULL, NULL) == ATVOSS_TABLE_BAD_INPUT, "NULL result refused", NULL);
  check(atvoss_table_lookup(t, "not json", &result, NULL) == ATVOSS_TABLE_BAD_INPUT && result == NULL,
        "a NULL error pointer is allowed", NULL);

  error = NULL;
  check(atvoss_table_open("/nonexistent/table.json", &missing, &error) == ATVOSS_TABLE_IO, "missing file: IO", error);
  check(missing == NULL, "missing file: no handle", NULL);
  check(error != NULL && strstr(error, "cannot open") != NULL, "missing file explained", error);
  atvoss_table_free_string(error);
  check(atvoss_table_open(NULL, &missing, NULL) == ATVOSS_TABLE_BAD_INPUT, "NULL path refused", NULL);
  check(atvoss_table_open(argv[1], NULL, NULL) == ATVOSS_TABLE_BAD_INPUT, "NULL out refused", NULL);
  check(atvoss_table_size(NULL) == 0, "size of NULL", NULL);

  atvoss_table_close(t);
  atvoss_table_close(NULL);
  if (failures == 0) printf("atvoss_table C API: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
