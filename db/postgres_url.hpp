// How a store is named: a path names an SQLite file; a postgresql:// (or postgres://) URL
// names a database on a PostgreSQL server. Every tool's --db, a job spec's "database" and
// Python's atvoss.Database take either; TuningDatabase::open checks a URL (the password
// must not be in it) and reaches the server.
#pragma once

#include <string>
#include <string_view>

#include "core/user_paths.hpp"

namespace atvoss::db {

inline bool is_postgres_url(std::string_view name) {
  return name.starts_with("postgresql://") || name.starts_with("postgres://");
}

// The file checks of core/user_paths.hpp for a database named by path: an existing,
// readable file (must_exist) or a place where one may be created. A URL passes: opening
// it is its check.
inline void require_database(const std::string& name, std::string_view what, bool must_exist) {
  if (is_postgres_url(name)) return;
  if (must_exist) {
    require_input_file(name, what);
  } else {
    require_output_file(name, what);
  }
}

}  // namespace atvoss::db
