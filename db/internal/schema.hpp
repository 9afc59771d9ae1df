// The tuning database schema as a list of migrations, one per schema version step, written
// once in SQLite's dialect; PostgreSQL runs the same text with its type names
// (postgres_ddl). SQLite keeps the version in PRAGMA user_version, PostgreSQL in the table
// atvoss_schema. Internal to db/; exposed so tests can build a file of an older version.
//
// To change the schema: append a migration (never edit a released one), bump
// TuningDatabase::kSchemaVersion, and add a test that opens a file of the previous version.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace atvoss::db {

class Connection;

// PRAGMA application_id of every atvoss database ("atvs"), so that another application's
// SQLite file is refused instead of being migrated.
inline constexpr int kApplicationId = 0x61747673;

// migrations()[i] is the SQL that takes a file from version i to version i + 1.
const std::vector<std::string_view>& migrations();

// A migration's text in PostgreSQL's spelling: identity ids, BIGINT, DOUBLE PRECISION, BYTEA.
std::string postgres_ddl(std::string_view sqlite_ddl);

// PostgreSQL: the relations (tables, views, sequences; named `name` if given) in the
// connection's current schema, counted in pg_class, which lists them whatever their owner
// and grants (information_schema lists only those the role may use, so another
// application's private tables would look like an empty schema).
std::int64_t postgres_relation_count(Connection& conn, std::string_view name = {});

// PostgreSQL: takes the advisory lock that orders opening against creating the schema, held
// until the transaction ends: exclusive by the writer that creates or migrates the schema,
// shared by an open reading the schema's identity and version. REQUIRES: inside a transaction.
void lock_schema(Connection& conn, bool exclusive);

// The schema version stored in the database; 0 for one without atvoss tables.
std::int64_t stored_schema_version(Connection& conn);

// Applies the migrations from version `from` up to `to` and records the version.
// REQUIRES: the caller holds a write transaction on conn (so a failure leaves the old file).
void migrate(Connection& conn, int from, int to);

// bad_input if version is newer than this build supports (nothing was written).
void refuse_newer(const std::string& name, std::int64_t version, int supported);

// Brings the schema to version `to` in one write transaction (or, read-only, checks that
// one exists). name says which database errors are about.
void upgrade_schema(Connection& conn, const std::string& name, bool read_only, int to);

}  // namespace atvoss::db
