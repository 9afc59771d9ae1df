#include "db/internal/sqlite.hpp"

#include <sqlite3.h>

#include <algorithm>

namespace atvoss::db {

void throw_sqlite(int rc, sqlite3* db, std::string_view context) {
  const std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const std::string what = std::string(context) + ": " + detail;
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw BusyError(what);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      throw Error(ErrorKind::corrupt, what + " (the file is damaged or not a database)");
    case SQLITE_CONSTRAINT:
      throw Error(ErrorKind::internal, what);
    default:
      throw Error(ErrorKind::io, what);
  }
}

// ---- SqliteStatement ---------------------------------------------------------------------

SqliteStatement::SqliteStatement(sqlite3* db, std::string_view sql) : db_(db) {
  const int rc =
      sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt_);  // no-op on null; a failed prepare may still allocate nothing
    stmt_ = nullptr;
    throw_sqlite(rc, db, "preparing '" + std::string(sql.substr(0, 60)) + "'");
  }
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

Statement& SqliteStatement::bind(int index, std::int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) throw_sqlite(rc, db_, "binding parameter " + std::to_string(index));
  return *this;
}

Statement& SqliteStatement::bind(int index, double value) {
  const int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) throw_sqlite(rc, db_, "binding parameter " + std::to_string(index));
  return *this;
}

Statement& SqliteStatement::bind(int index, std::string_view text) {
  const int rc = sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) throw_sqlite(rc, db_, "binding parameter " + std::to_string(index));
  return *this;
}

Statement& SqliteStatement::bind_static(int index, std::string_view text) {
  const int rc = sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8);
  if (rc != SQLITE_OK) throw_sqlite(rc, db_, "binding parameter " + std::to_string(index));
  return *this;
}

Statement& SqliteStatement::bind_blob(int index, std::span<const std::uint8_t> bytes) {
  // An empty span may have a null data(); SQLite would then bind NULL, not an empty blob.
  static const std::uint8_t empty = 0;
  const void* data = bytes.empty() ? &empty : bytes.data();
  const int rc = sqlite3_bind_blob64(stmt_, index, data, bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) throw_sqlite(rc, db_, "binding parameter " + std::to_string(index));
  return *this;
}

Statement& SqliteStatement::bind_null(int index) {
  const int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) throw_sqlite(rc, db_, "binding parameter " + std::to_string(index));
  return *this;
}

bool SqliteStatement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // Reset now so that the statement is reusable after the caller's retry.
  sqlite3_reset(stmt_);
  throw_sqlite(rc, db_, "running '" + std::string(sqlite3_sql(stmt_)).substr(0, 60) + "'");
}

void SqliteStatement::reset() noexcept {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool SqliteStatement::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

std::int64_t SqliteStatement::column_int64(int col) const { return sqlite3_column_int64(stmt_, col); }

double SqliteStatement::column_double(int col) const { return sqlite3_column_double(stmt_, col); }

std::string SqliteStatement::column_text(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  const int n = sqlite3_column_bytes(stmt_, col);
  return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p), n);
}

std::vector<std::uint8_t> SqliteStatement::column_blob(int col) const {
  const auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(stmt_, col));
  const int n = sqlite3_column_bytes(stmt_, col);
  return p == nullptr ? std::vector<std::uint8_t>() : std::vector<std::uint8_t>(p, p + n);
}

// ---- SqliteConnection --------------------------------------------------------------

void SqliteConnection::Closer::operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }

SqliteConnection::SqliteConnection(const std::string& path, int flags, int lock_wait_ms)
    : Connection(path, lock_wait_ms) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  db_.reset(raw);  // own it first: a failed open still returns a handle that must be closed
  if (rc != SQLITE_OK) throw_sqlite(rc, raw, "opening database " + path);
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, lock_wait_ms);
}

std::size_t SqliteConnection::read_file_prefix(std::span<unsigned char> out, std::int64_t& size) const {
  sqlite3_file* file = nullptr;
  size = 0;
  if (sqlite3_file_control(db_.get(), "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || file == nullptr ||
      file->pMethods == nullptr) {
    return 0;  // not opened yet (a new file): nothing to read
  }
  sqlite3_int64 bytes = 0;
  if (file->pMethods->xFileSize(file, &bytes) != SQLITE_OK) return 0;
  size = bytes;
  const auto n = static_cast<std::size_t>(std::min<sqlite3_int64>(bytes, static_cast<sqlite3_int64>(out.size())));
  if (n == 0 || file->pMethods->xRead(file, out.data(), static_cast<int>(n), 0) != SQLITE_OK) return 0;
  return n;
}

SqliteConnection::~SqliteConnection() {
  clear_statements();  // statements must be finalized before the handle closes
}

std::unique_ptr<Statement> SqliteConnection::make_statement(std::string_view sql) {
  return std::make_unique<SqliteStatement>(db_.get(), sql);
}

void SqliteConnection::exec(std::string_view sql) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db_.get(), std::string(sql).c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    const std::string text = message != nullptr ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    const std::string what = "'" + std::string(sql.substr(0, 60)) + "' on " + path();
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) throw BusyError(what + ": " + text);
    throw_sqlite(rc, db_.get(), what);
  }
}

std::int64_t SqliteConnection::changes() const { return sqlite3_changes64(db_.get()); }

std::int64_t SqliteConnection::last_insert_rowid() { return sqlite3_last_insert_rowid(db_.get()); }

bool SqliteConnection::in_transaction() const { return sqlite3_get_autocommit(db_.get()) == 0; }

void SqliteConnection::begin_write() { exec("BEGIN IMMEDIATE"); }

void SqliteConnection::commit() { exec("COMMIT"); }

void SqliteConnection::rollback() noexcept {
  // ROLLBACK can fail only if SQLite already rolled back (e.g. after SQLITE_FULL); then
  // there is nothing left to undo, so the error is deliberately ignored.
  sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

}  // namespace atvoss::db
