/* C API of the runtime schedule table (library atvoss_table), for compilers written in C,
 * or Python through ctypes. Wraps atvoss::table::ScheduleTable (schedule_table.hpp, which
 * documents the file format and the nearest-shape distance).
 *
 * Linking: static library atvoss_table (C++ callers, or C programs linked with a C++
 * linker), or the shared libatvoss_table.so in build/lib (C, Python ctypes, dlopen):
 *     lib = ctypes.CDLL("build/lib/libatvoss_table.so")
 *     lib.atvoss_table_lookup.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
 *                                         ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
 *     (tests/db/table_ctypes_test.py shows the whole round trip)
 *
 * Threading: a handle may be shared by many threads for atvoss_table_lookup once open
 * returned; close it once, after every lookup finished.
 * Ownership: every char* this API hands out is malloc'd and belongs to the caller, who
 * frees it with atvoss_table_free_string. No function throws or aborts on bad input. */
#ifndef ATVOSS_TABLE_H
#define ATVOSS_TABLE_H

/* The shared library (libatvoss_table.so, for ctypes and dlopen) exports only these. */
#if defined(__GNUC__)
#define ATVOSS_TABLE_API __attribute__((visibility("default")))
#else
#define ATVOSS_TABLE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atvoss_table atvoss_table;

/* Every call that can fail returns a status (the values of atvoss_runtime_status in
 * runtime/atvoss_runtime.h: one convention for atvoss's C APIs); on failure, if error is not
 * NULL, *error receives a malloc'd message naming the argument, field or file (free it with
 * atvoss_table_free_string). */
typedef enum {
  ATVOSS_TABLE_OK = 0,
  ATVOSS_TABLE_BAD_INPUT = 1, /* a NULL argument, a bad workload, a table file that is not a table */
  ATVOSS_TABLE_NOT_FOUND = 2,
  ATVOSS_TABLE_IO = 3,      /* a file that cannot be read */
  ATVOSS_TABLE_CORRUPT = 4, /* a table whose checksum or entry count does not match */
  ATVOSS_TABLE_INTERNAL = 5
} atvoss_table_status;

/* Loads and validates a table file into *out (NULL on failure). */
ATVOSS_TABLE_API atvoss_table_status atvoss_table_open(const char* path, atvoss_table** out, char** error);

/* Looks up a workload given as JSON text ({"op":"matmul","dtype":"float16",
 * "dims":{"M":..,"N":..,"K":..},"epilogue":[]}) into *result_json (malloc'd; NULL on failure):
 *   {"match":"exact"|"nearest"|"none","distance":d,"workload":{..},"schedule":{..},
 *    "time_us":t,"target":"<name>"}
 * A shape the table lacks is not a failure: ATVOSS_TABLE_OK with "match":"none". */
ATVOSS_TABLE_API atvoss_table_status atvoss_table_lookup(const atvoss_table* table, const char* workload_json,
                                                         char** result_json, char** error);

/* Number of entries in the table (0 for NULL). */
ATVOSS_TABLE_API long atvoss_table_size(const atvoss_table* table);

ATVOSS_TABLE_API void atvoss_table_free_string(char* text);

/* Releases the table; NULL is ignored. */
ATVOSS_TABLE_API void atvoss_table_close(atvoss_table* table);

#ifdef __cplusplus
}
#endif

#endif /* ATVOSS_TABLE_H */
