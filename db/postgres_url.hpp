// How a store is named: a path names an SQLite file; a postgresql:// (or postgres://) URL
// names a database on a PostgreSQL server. Every tool's --db, a job spec's "database" and
// Python's atvoss.Database take either. check_postgres_url is the one strict check of a
// URL (TuningDatabase::open and require_database call it before anything connects), and
// display_database_name the one way a message quotes a database's name. Stateless and
// thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/user_paths.hpp"

namespace atvoss::db {

inline bool is_postgres_url(std::string_view name) {
  return name.starts_with("postgresql://") || name.starts_with("postgres://");
}

// The longest URL accepted. Real ones are well under 200 bytes; a longer one is a mistake
// or an attack, and refusing it bounds what libpq parses and what a message could repeat.
inline constexpr std::size_t kMaxPostgresUrlBytes = 4096;

// bad_input unless url is a PostgreSQL URL atvoss accepts, before libpq sees it:
//  - at most kMaxPostgresUrlBytes, without a NUL byte (raw, which would cut the URL short
//    where libpq reads it, or as %00);
//  - no password, in the user info or as a parameter: a URL is typed on command lines and
//    written to job specs and logs, so the password belongs in PGPASSFILE, PGPASSWORD or a
//    service file, where libpq finds it;
//  - only the query parameters that name where and how to connect (host, port, sslmode...;
//    the message lists them), sslmode one of libpq's modes, and options= no more than
//    "-csearch_path=<schema>" (the way a URL picks its schema), never other server settings;
//  - a URL libpq can parse.
// The message starts with `what` (the flag or field, if any), names what is wrong and
// never quotes the URL, nor any part of its user info.
void check_postgres_url(std::string_view url, std::string_view what = {});

// A database's name as a message may quote it: a path unchanged; a URL with the password
// in its user info or parameters replaced by "***", bytes outside printable ASCII by '?',
// and cut to 200 characters. Never throws.
std::string display_database_name(std::string_view name);

// The file checks of core/user_paths.hpp for a database named by path: an existing,
// readable file (must_exist) or a place where one may be created. A URL gets
// check_postgres_url: reaching the server is opening's check.
inline void require_database(const std::string& name, std::string_view what, bool must_exist) {
  if (is_postgres_url(name)) {
    check_postgres_url(name, what);
  } else if (must_exist) {
    require_input_file(name, what);
  } else {
    require_output_file(name, what);
  }
}

}  // namespace atvoss::db
