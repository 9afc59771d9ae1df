// The one error convention of atvoss's C APIs (db/table/atvoss_table.h and
// runtime/atvoss_runtime.h): every call returns a status whose values are CStatus's, and on
// failure hands the caller a malloc'd message through `char** error`. c_guarded runs a call's
// body and maps any exception to both, exactly once, so nothing unwinds into a C caller.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace atvoss::table {

// The values of atvoss_table_status and atvoss_runtime_status (each C API's header spells them
// out for C; its c_api.cpp checks they match).
enum class CStatus : int { ok = 0, bad_input = 1, not_found = 2, io = 3, corrupt = 4, internal = 5 };

// malloc'd copy, because C callers free what the API returns with free() (their *_free_string).
inline char* c_string(const std::string& s) noexcept {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out != nullptr) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

inline CStatus c_status_of(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::bad_input:
      return CStatus::bad_input;
    case ErrorKind::not_found:
      return CStatus::not_found;
    case ErrorKind::io:
      return CStatus::io;
    case ErrorKind::corrupt:
      return CStatus::corrupt;
    default:
      return CStatus::internal;
  }
}

// bad_input naming a NULL argument: "<api>: argument '<name>' is NULL".
inline void c_need(const void* p, const char* api, const char* name) {
  if (p == nullptr) throw_bad_input(std::string(api) + ": argument '" + name + "' is NULL");
}

// Runs body; maps any exception to its status and, where error is not NULL, its message.
// api names the library in the message of an exception that is not a std::exception.
template <typename Body>
CStatus c_guarded(char** error, const char* api, Body&& body) noexcept {
  if (error != nullptr) *error = nullptr;
  CStatus status = CStatus::internal;
  std::string message;
  try {
    body();
    return CStatus::ok;
  } catch (const Error& e) {
    status = c_status_of(e.kind());
    message = e.what();
  } catch (const std::exception& e) {
    status = CStatus::bad_input;  // JSON and argument errors of the standard library
    message = e.what();
  } catch (...) {
    message = std::string(api) + ": unknown error";
  }
  if (error != nullptr) *error = c_string(message);
  return status;
}

}  // namespace atvoss::table
