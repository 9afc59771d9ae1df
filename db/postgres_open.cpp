// TuningDatabase::open_postgres: opening a database on a PostgreSQL server by URL. The URL
// is checked before any connection (a malformed one, or one carrying a password, is
// bad input); then the schema is checked and created or migrated as for an SQLite file
// (db/internal/schema.hpp). The operations on an open database are in
// db/tuning_database.cpp.
#include <libpq-fe.h>

#include <memory>

#include "core/error.hpp"
#include "db/internal/postgres.hpp"
#include "db/internal/rows.hpp"
#include "db/internal/schema.hpp"
#include "db/tuning_database.hpp"

namespace atvoss::db {
namespace {

// bad_input unless libpq can parse url, and the URL carries no password: a URL is typed on
// command lines and written to job specs and logs, so the password belongs in PGPASSFILE,
// PGPASSWORD or a service file, where libpq finds it.
void check_url(const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  if (opts == nullptr) {
    std::string why = err != nullptr ? err : "out of memory";
    PQfreemem(err);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    throw_bad_input("database URL is malformed: " + why +
                    " (expected postgresql://[user@]host[:port]/dbname[?param=value...])");
  }
  bool has_password = false;
  for (const PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (std::string_view(o->keyword) == "password" && o->val != nullptr && *o->val != '\0') has_password = true;
  }
  PQconninfoFree(opts);
  if (has_password) {
    throw_bad_input(
        "database URL carries a password; remove it from the URL and put it in "
        "PGPASSFILE (~/.pgpass), PGPASSWORD or a service file, so that it never "
        "appears on a command line or in a log");
  }
}

// Refuses a database whose current schema holds tables but no atvoss schema row, or an
// atvoss_schema table of something else, before anything is written.
void check_identity(Connection& c, const std::string& url) {
  const auto ours = c.query_int(
      "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() "
      "AND table_name = 'atvoss_schema'");
  if (ours == 0) {
    const auto others =
        c.query_int("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()");
    if (others > 0) {
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
  check_url(url);
  auto conn = std::make_unique<PostgresConnection>(url, options.lock_wait_ms);
  conn->set_session(session_settings(options));
  TuningDatabase db(url, std::move(conn));
  Connection& c = *db.conn_;
  c.read([&] { check_identity(c, url); });
  const auto version = c.read([&] { return stored_schema_version(c); });
  refuse_newer(url, version, kSchemaVersion);
  if (version == 0 && options.must_exist) {
    throw Error(ErrorKind::not_found, "database " + url + " holds no atvoss tuning database");
  }
  upgrade_schema(c, url, options.read_only, kSchemaVersion);
  return db;
}

}  // namespace atvoss::db
