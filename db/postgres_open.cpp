// TuningDatabase::open_postgres: opening a database on a PostgreSQL server by URL. The URL
// is checked before any connection (check_postgres_url: a malformed one, or one carrying
// a password, is bad input); then the schema is checked and created or migrated as for an SQLite file
// (db/internal/schema.hpp). The operations on an open database are in
// db/tuning_database.cpp.
#include <libpq-fe.h>

#include <memory>

#include "core/error.hpp"
#include "db/internal/postgres.hpp"
#include "db/internal/rows.hpp"
#include "db/internal/schema.hpp"
#include "db/postgres_url.hpp"
#include "db/tuning_database.hpp"

namespace atvoss::db {
namespace {

// Refuses a database whose current schema holds tables but no atvoss schema row, or an
// atvoss_schema table of something else, before anything is written.
void check_identity(Connection& c, const std::string& url) {
  if (postgres_relation_count(c, "atvoss_schema") == 0) {
    if (postgres_relation_count(c) > 0) {
      throw_bad_input(url +
                      " already holds tables of another application in its schema; refusing to "
                      "add atvoss tables to it (use an empty database or another schema)");
    }
    return;
  }
  if (c.query_int("SELECT count(*) FROM atvoss_schema WHERE application = 'atvoss'") != 1) {
    throw_bad_input(url + " has an atvoss_schema table that atvoss did not write; refusing to open it");
  }
}

std::string session_settings(const OpenOptions& options) {
  std::string s;
  // OpenOptions::sync_every_commit = false: a commit returns before its WAL reaches disk
  // (a server crash may lose the last commits, never corrupt them), as SQLite's NORMAL.
  if (!options.sync_every_commit) s += "SET synchronous_commit = off; ";
  if (options.read_only) s += "SET default_transaction_read_only = on; ";
  return s;
}

}  // namespace

TuningDatabase TuningDatabase::open_postgres(const std::string& url, const OpenOptions& options) {
  check_postgres_url(url);
  auto conn = std::make_unique<PostgresConnection>(url, options.lock_wait_ms);
  conn->set_session(session_settings(options));
  TuningDatabase db(url, std::move(conn));
  Connection& c = *db.conn_;
  // Read under the schema lock, in one transaction that writes nothing: outside it, this open
  // could see no atvoss_schema table and then, one query later, the tables that another
  // process's first open has just committed, and take them for another application's.
  const auto version = c.write([&] {
    lock_schema(c, false);
    check_identity(c, url);
    return stored_schema_version(c);
  });
  refuse_newer(url, version, kSchemaVersion);
  if (version == 0 && options.must_exist) {
    throw Error(ErrorKind::not_found, "database " + url + " holds no atvoss tuning database");
  }
  upgrade_schema(c, url, options.read_only, kSchemaVersion);
  return db;
}

}  // namespace atvoss::db
