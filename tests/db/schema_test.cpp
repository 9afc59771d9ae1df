// Versioning and damaged files: an older schema is migrated in place, a newer one, a
// garbage file, a truncated file or another application's SQLite file is refused with a
// clear error and left byte-for-byte untouched.
#include <sqlite3.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "db/internal/schema.hpp"
#include "db/tuning_database.hpp"
#include "db_test_util.hpp"

namespace atvoss::db {
namespace {

using namespace atvoss::db::testing;
using ::testing::HasSubstr;

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// Opening must fail with `kind` and a message containing `needle`, and leave the file as it was.
void expect_refused(const std::string& path, ErrorKind kind, const std::string& needle) {
  const std::string before = file_bytes(path);
  try {
    auto db = TuningDatabase::open(path);
    FAIL() << "open succeeded; integrity: " << db.integrity_check();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(needle));
    EXPECT_THAT(e.what(), HasSubstr(path));
  }
  EXPECT_TRUE(file_bytes(path) == before) << path << " was modified by the refused open";
  EXPECT_FALSE(std::filesystem::exists(path + "-wal") && std::filesystem::file_size(path + "-wal") > 0);
}

TEST(SchemaTest, FreshFileGetsTheCurrentVersionInWalMode) {
  TempDir dir;
  const auto path = dir.file("new.db");
  auto db = TuningDatabase::open(path);
  EXPECT_EQ(db.schema_version(), TuningDatabase::kSchemaVersion);
  EXPECT_EQ(db.integrity_check(), "ok");
  EXPECT_TRUE(std::filesystem::exists(path + "-wal"));
  // Opening again is a no-op migration.
  auto again = TuningDatabase::open(path);
  EXPECT_EQ(again.schema_version(), TuningDatabase::kSchemaVersion);
}

// A file as version 1 of the schema wrote it: one target "old-npu" (key "tk"), one record.
void make_version_one_file(const std::string& path) {
  std::string v1(migrations()[0]);
  raw_exec(path, "BEGIN;" + v1 + "PRAGMA application_id = " + std::to_string(kApplicationId) +
                     "; PRAGMA user_version = 1;"
                     "INSERT INTO targets VALUES(1, 'tk', 'old-npu', '{\"name\":\"old-npu\"}');"
                     "INSERT INTO workloads VALUES(1, '" +
                     matmul(8, 8, 8).key() + "', 'matmul', '" + matmul(8, 8, 8).to_json().dump() +
                     "');"
                     "INSERT INTO records(workload_id, target_id, schedule, schedule_key, status, time_us,"
                     " repeats, created_at) VALUES(1, 1, '{\"tile_m\":8}', 'sk', 'ok', 4.5, '[4.5]', 1);"
                     "COMMIT;");
}

TEST(SchemaTest, VersionOneFileIsMigratedInPlaceKeepingItsRecords) {
  TempDir dir;
  const auto path = dir.file("v1.db");
  make_version_one_file(path);
  {
    OpenOptions ro;
    ro.read_only = true;
    auto old = TuningDatabase::open(path, ro);  // read-only: readable, not migrated
    EXPECT_EQ(old.schema_version(), 1);
    EXPECT_EQ(old.records().best(matmul(8, 8, 8).key(), "tk", 1).size(), 1u);
    EXPECT_EQ(old.stats().records, 1);
  }
  auto db = TuningDatabase::open(path);
  EXPECT_EQ(db.schema_version(), TuningDatabase::kSchemaVersion);
  const auto best = db.records().best(matmul(8, 8, 8).key(), "tk", 1);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_DOUBLE_EQ(best[0].measurement.time_us, 4.5);
  const auto job = db.jobs().create("after-upgrade", Json::object());  // v2 tables exist
  db.jobs().save_task(job, "task", Json::object());                    // v3 tables exist
  EXPECT_EQ(db.jobs().tasks(job).size(), 1u);
  EXPECT_EQ(db.integrity_check(), "ok");
}

TEST(SchemaTest, VersionOneFileMergesWithoutBeingUpgraded) {
  TempDir dir;
  const auto path = dir.file("v1.db");
  make_version_one_file(path);
  auto db = TuningDatabase::open(dir.file("new.db"));
  const MergeReport rep = db.merge_from(path);
  EXPECT_EQ(rep.added, 1);
  EXPECT_EQ(db.records().best(matmul(8, 8, 8).key(), "tk", 1).size(), 1u);
  OpenOptions ro;
  ro.read_only = true;
  EXPECT_EQ(TuningDatabase::open(path, ro).schema_version(), 1);  // the source stays as it was
}

TEST(SchemaTest, NewerSchemaIsRefusedAndUntouched) {
  TempDir dir;
  const auto path = dir.file("future.db");
  {
    auto db = TuningDatabase::open(path);
    db.records().insert(record(matmul(8, 8, 8), TargetInfo::named("n"), tiles(8, 8), ok_us(1)));
  }
  raw_exec(path, "PRAGMA user_version = 99; PRAGMA wal_checkpoint(TRUNCATE);");
  expect_refused(path, ErrorKind::bad_input, "newer");
  // A future file in rollback-journal mode is refused before the switch to WAL rewrites it.
  raw_exec(path, "PRAGMA journal_mode = DELETE;");
  expect_refused(path, ErrorKind::bad_input, "newer");
}

TEST(SchemaTest, EmptyPathIsBadInput) {
  try {
    TuningDatabase::open("");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
  }
}

TEST(SchemaTest, GarbageFileIsRefusedAndUntouched) {
  TempDir dir;
  const auto path = dir.file("garbage.db");
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 8192; ++i) out.put(static_cast<char>((i * 7919) % 251));
  }
  expect_refused(path, ErrorKind::corrupt, "not an SQLite file");
}

TEST(SchemaTest, TruncatedFileIsRefusedAndUntouched) {
  TempDir dir;
  const auto path = dir.file("cut.db");
  {
    auto db = TuningDatabase::open(path);
    std::vector<Record> batch;
    for (int i = 1; i <= 2000; ++i)
      batch.push_back(record(matmul(64, 64, i), TargetInfo::named("n"), tiles(8, 8), ok_us(i)));
    db.records().insert(batch);
  }  // last connection closed: WAL checkpointed into the main file and removed
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 40000u);
  std::filesystem::resize_file(path, size / 2);
  expect_refused(path, ErrorKind::corrupt, "truncated");
}

TEST(SchemaTest, ForeignSqliteFileIsRefusedAndUntouched) {
  TempDir dir;
  const auto path = dir.file("other-app.db");
  raw_exec(path, "CREATE TABLE accounts(id INTEGER PRIMARY KEY, balance REAL);");
  expect_refused(path, ErrorKind::bad_input, "without atvoss tables");
  raw_exec(path, "PRAGMA application_id = 1234;");
  expect_refused(path, ErrorKind::bad_input, "another application");
}

TEST(SchemaTest, ReadOnlyOpenOfAMissingFileIsNotFound) {
  TempDir dir;
  OpenOptions ro;
  ro.read_only = true;
  try {
    TuningDatabase::open(dir.file("missing.db"), ro);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("missing.db")));
}

}  // namespace
}  // namespace atvoss::db
