// The C API of atvoss_table (atvoss_table.h), under the C APIs' one error convention
// (c_boundary.hpp): a status and a message, nothing unwinding into a C caller.
#include "db/table/atvoss_table.h"

#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "db/table/c_boundary.hpp"
#include "db/table/schedule_table.hpp"

struct atvoss_table {
  std::shared_ptr<const atvoss::table::ScheduleTable> table;
};

namespace {

using atvoss::table::CStatus;

static_assert(ATVOSS_TABLE_OK == int(CStatus::ok) && ATVOSS_TABLE_BAD_INPUT == int(CStatus::bad_input) &&
              ATVOSS_TABLE_NOT_FOUND == int(CStatus::not_found) && ATVOSS_TABLE_IO == int(CStatus::io) &&
              ATVOSS_TABLE_CORRUPT == int(CStatus::corrupt) && ATVOSS_TABLE_INTERNAL == int(CStatus::internal));

template <typename Body>
atvoss_table_status guarded(char** error, Body&& body) noexcept {
  return static_cast<atvoss_table_status>(atvoss::table::c_guarded(error, "table", std::forward<Body>(body)));
}

void need(const void* p, const char* name) { atvoss::table::c_need(p, "table", name); }

}  // namespace

extern "C" atvoss_table_status atvoss_table_open(const char* path, atvoss_table** out, char** error) {
  if (out != nullptr) *out = nullptr;
  return guarded(error, [&] {
    need(out, "out");
    need(path, "path");
    auto handle = std::make_unique<atvoss_table>();
    handle->table = atvoss::table::ScheduleTable::load(path);
    *out = handle.release();  // owned by the caller until atvoss_table_close
  });
}

extern "C" atvoss_table_status atvoss_table_lookup(const atvoss_table* table, const char* workload_json,
                                                   char** result_json, char** error) {
  if (result_json != nullptr) *result_json = nullptr;
  return guarded(error, [&] {
    need(result_json, "result_json");
    need(table, "table");
    need(workload_json, "workload_json");
    const auto w = atvoss::Workload::from_json(atvoss::parse_json(workload_json, "workload"));
    const std::string text = table->table->lookup(w).to_json(table->table->header().target_name).dump();
    *result_json = atvoss::table::c_string(text);
    if (*result_json == nullptr) throw std::bad_alloc();
  });
}

extern "C" long atvoss_table_size(const atvoss_table* table) {
  return table == nullptr ? 0 : static_cast<long>(table->table->entries().size());
}

extern "C" void atvoss_table_free_string(char* text) { std::free(text); }

extern "C" void atvoss_table_close(atvoss_table* table) { delete table; }
