// The tuning database schema as a list of migrations, one per PRAGMA user_version step.
// Internal to db/; exposed so tests can build a file of an older version.
//
// To change the schema: append a migration (never edit a released one), bump
// TuningDatabase::kSchemaVersion, and add a test that opens a file of the previous version.
#pragma once

#include <string_view>
#include <vector>

namespace atvoss::db {

class Connection;

// PRAGMA application_id of every atvoss database ("atvs"), so that another application's
// SQLite file is refused instead of being migrated.
inline constexpr int kApplicationId = 0x61747673;

// migrations()[i] is the SQL that takes a file from version i to version i + 1.
const std::vector<std::string_view>& migrations();

// Applies the migrations from version `from` up to `to` and sets user_version.
// REQUIRES: the caller holds a write transaction on conn (so a failure leaves the old file).
void migrate(Connection& conn, int from, int to);

}  // namespace atvoss::db
