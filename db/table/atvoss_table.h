/* C API of the runtime schedule table (library atvoss_table), for compilers written in C,
 * or Python through ctypes. Wraps atvoss::table::ScheduleTable (schedule_table.hpp, which
 * documents the file format and the nearest-shape distance).
 *
 * Threading: a handle may be shared by many threads for atvoss_table_lookup once open
 * returned; close it once, after every lookup finished.
 * Ownership: every char* returned by this API is malloc'd and belongs to the caller, who
 * frees it with atvoss_table_free_string. No function throws or aborts on bad input. */
#ifndef ATVOSS_TABLE_H
#define ATVOSS_TABLE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atvoss_table atvoss_table;

/* Loads and validates a table file. Returns NULL on failure; then, if error is not NULL,
 * *error receives a message (free it with atvoss_table_free_string). */
atvoss_table* atvoss_table_open(const char* path, char** error);

/* Looks up a workload given as JSON text ({"op":"matmul","dtype":"float16",
 * "dims":{"M":..,"N":..,"K":..},"epilogue":[]}). Returns JSON text, never NULL except when
 * out of memory:
 *   {"match":"exact"|"approximate"|"none","distance":d,"workload":{..},"schedule":{..},
 *    "time_us":t,"target":"<name>"}                      on success
 *   {"match":"error","error":"<message>"}                on a bad handle or bad workload. */
char* atvoss_table_lookup(const atvoss_table* table, const char* workload_json);

/* Number of entries in the table (0 for NULL). */
long atvoss_table_size(const atvoss_table* table);

void atvoss_table_free_string(char* text);

/* Releases the table; NULL is ignored. */
void atvoss_table_close(atvoss_table* table);

#ifdef __cplusplus
}
#endif

#endif /* ATVOSS_TABLE_H */
