// The C API of atvoss_table (atvoss_table.h): converts every C++ exception to a JSON or
// NULL-plus-message result exactly once, here, so nothing unwinds into a C caller.
#include "db/table/atvoss_table.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "db/table/schedule_table.hpp"

struct atvoss_table {
  std::shared_ptr<const atvoss::table::ScheduleTable> table;
};

namespace {

// malloc'd copy, because the caller frees it with atvoss_table_free_string (free()).
char* c_string(const std::string& s) noexcept {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out != nullptr) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

char* error_json(const std::string& message) noexcept {
  try {
    return c_string(atvoss::Json{{"match", "error"}, {"error", message}}.dump());
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

extern "C" atvoss_table* atvoss_table_open(const char* path, char** error) {
  if (error != nullptr) *error = nullptr;
  try {
    if (path == nullptr) throw atvoss::Error(atvoss::ErrorKind::bad_input, "table: path is NULL");
    auto handle = std::make_unique<atvoss_table>();
    handle->table = atvoss::table::ScheduleTable::load(path);
    return handle.release();  // owned by the caller until atvoss_table_close
  } catch (const std::exception& e) {
    if (error != nullptr) *error = c_string(e.what());
  } catch (...) {
    if (error != nullptr) *error = c_string("table: unknown error");
  }
  return nullptr;
}

extern "C" char* atvoss_table_lookup(const atvoss_table* table, const char* workload_json) {
  if (table == nullptr) return error_json("table handle is NULL");
  if (workload_json == nullptr) return error_json("workload JSON is NULL");
  try {
    const auto w = atvoss::Workload::from_json(atvoss::parse_json(workload_json, "workload"));
    return c_string(table->table->lookup(w).to_json(table->table->header().target_name).dump());
  } catch (const std::exception& e) {
    return error_json(e.what());
  } catch (...) {
    return error_json("unknown error");
  }
}

extern "C" long atvoss_table_size(const atvoss_table* table) {
  return table == nullptr ? 0 : static_cast<long>(table->table->entries().size());
}

extern "C" void atvoss_table_free_string(char* text) { std::free(text); }

extern "C" void atvoss_table_close(atvoss_table* table) { delete table; }
