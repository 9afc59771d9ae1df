/* C API of the runtime schedule table (library atvoss_table), for compilers written in C,
 * or Python through ctypes. Wraps atvoss::table::ScheduleTable (schedule_table.hpp, which
 * documents the file format and the nearest-shape distance).
 *
 * Linking: static library atvoss_table (C++ callers, or C programs linked with a C++
 * linker), or the shared libatvoss_table.so in build/lib (C, Python ctypes, dlopen):
 *     lib = ctypes.CDLL("build/lib/libatvoss_table.so")
 *     lib.atvoss_table_open.restype = ctypes.c_void_p
 *     lib.atvoss_table_lookup.restype = ctypes.c_void_p   # keep the pointer to free it
 *     lib.atvoss_table_lookup.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
 *     (tests/db/table_ctypes_test.py shows the whole round trip)
 *
 * Threading: a handle may be shared by many threads for atvoss_table_lookup once open
 * returned; close it once, after every lookup finished.
 * Ownership: every char* returned by this API is malloc'd and belongs to the caller, who
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

/* Loads and validates a table file. Returns NULL on failure; then, if error is not NULL,
 * *error receives a message (free it with atvoss_table_free_string). */
ATVOSS_TABLE_API atvoss_table* atvoss_table_open(const char* path, char** error);

/* Looks up a workload given as JSON text ({"op":"matmul","dtype":"float16",
 * "dims":{"M":..,"N":..,"K":..},"epilogue":[]}). Returns JSON text, never NULL except when
 * out of memory:
 *   {"match":"exact"|"approximate"|"none","distance":d,"workload":{..},"schedule":{..},
 *    "time_us":t,"target":"<name>"}                      on success
 *   {"match":"error","error":"<message>"}                on a bad handle or bad workload. */
ATVOSS_TABLE_API char* atvoss_table_lookup(const atvoss_table* table, const char* workload_json);

/* Number of entries in the table (0 for NULL). */
ATVOSS_TABLE_API long atvoss_table_size(const atvoss_table* table);

ATVOSS_TABLE_API void atvoss_table_free_string(char* text);

/* Releases the table; NULL is ignored. */
ATVOSS_TABLE_API void atvoss_table_close(atvoss_table* table);

#ifdef __cplusplus
}
#endif

#endif /* ATVOSS_TABLE_H */
