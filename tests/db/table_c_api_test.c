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

static void expect_lookup(const atvoss_table* t, const char* workload, const char* needle) {
  char* result = atvoss_table_lookup(t, workload);
  check(result != NULL, "lookup returns text", workload);
  if (result != NULL) {
    check(strstr(result, needle) != NULL, needle, result);
    atvoss_table_free_string(result);
  }
}

int main(int argc, char** argv) {
  char* error = NULL;
  atvoss_table* t;
  if (argc < 2) {
    fprintf(stderr, "usage: %s table.json\n", argv[0]);
    return 2;
  }
  t = atvoss_table_open(argv[1], &error);
  check(t != NULL, "open the fixture", error);
  atvoss_table_free_string(error);
  if (t == NULL) return 1;
  check(atvoss_table_size(t) == 2, "two entries", NULL);

  expect_lookup(t, "{\"op\":\"matmul\",\"dims\":{\"M\":1024,\"N\":1024,\"K\":1024}}", "\"match\":\"exact\"");
  expect_lookup(t, "{\"op\":\"matmul\",\"dims\":{\"M\":1024,\"N\":1024,\"K\":1024}}", "\"tile_m\":128");
  expect_lookup(t, "{\"op\":\"matmul\",\"dims\":{\"M\":900,\"N\":1024,\"K\":1024}}", "\"match\":\"approximate\"");
  expect_lookup(t, "{\"op\":\"matmul\",\"dtype\":\"int8\",\"dims\":{\"M\":64,\"N\":64,\"K\":64}}",
                "\"match\":\"none\"");
  expect_lookup(t, "{\"op\":\"matmul\",\"dims\":{\"M\":-4}}", "\"match\":\"error\"");
  expect_lookup(t, "not json", "\"match\":\"error\"");
  expect_lookup(NULL, "{}", "\"match\":\"error\"");
  expect_lookup(t, NULL, "\"match\":\"error\"");

  error = NULL;
  check(atvoss_table_open("/nonexistent/table.json", &error) == NULL, "missing file refused", NULL);
  check(error != NULL && strstr(error, "cannot open") != NULL, "missing file explained", error);
  atvoss_table_free_string(error);
  check(atvoss_table_open(NULL, NULL) == NULL, "NULL path refused", NULL);
  check(atvoss_table_size(NULL) == 0, "size of NULL", NULL);

  atvoss_table_close(t);
  atvoss_table_close(NULL);
  if (failures == 0) printf("atvoss_table C API: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
