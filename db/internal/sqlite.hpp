// The SQLite driver of the SQL layer (db/internal/sql.hpp): a SqliteConnection owns one
// sqlite3 handle; its statements are SQLite prepared statements. Write transactions are
// BEGIN IMMEDIATE, so the busy handler covers the whole transaction and a reader never
// deadlocks upgrading to a writer. Internal to db/.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "db/internal/sql.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace atvoss::db {

// Throws the Error matching an SQLite result code: BusyError for BUSY/LOCKED, corrupt for
// CORRUPT/NOTADB, io otherwise. context says what was being done.
[[noreturn]] void throw_sqlite(int rc, sqlite3* db, std::string_view context);

class SqliteStatement final : public Statement {
 public:
  SqliteStatement(sqlite3* db, std::string_view sql);  // prepares; throws on a bad statement
  ~SqliteStatement() override;

  using Statement::bind;
  Statement& bind(int index, std::int64_t value) override;
  Statement& bind(int index, double value) override;
  Statement& bind(int index, std::string_view text) override;  // SQLITE_TRANSIENT
  Statement& bind_static(int index, std::string_view text) override;
  Statement& bind_blob(int index, std::span<const std::uint8_t> bytes) override;
  Statement& bind_null(int index) override;
  bool step() override;
  void reset() noexcept override;
  bool is_null(int col) const override;
  std::int64_t column_int64(int col) const override;
  double column_double(int col) const override;
  std::string column_text(int col) const override;
  std::vector<std::uint8_t> column_blob(int col) const override;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

class SqliteConnection final : public Connection {
 public:
  // flags: SQLite open flags. Applies the busy timeout. Throws io (or corrupt) on failure.
  SqliteConnection(const std::string& path, int flags, int lock_wait_ms);
  ~SqliteConnection() override;

  Dialect dialect() const override { return Dialect::sqlite; }
  void exec(std::string_view sql) override;
  bool in_transaction() const override;
  std::int64_t changes() const override;
  std::int64_t last_insert_rowid() override;

  // Reads up to out.size() bytes from the start of the main database file through SQLite's
  // own file handle, and returns how many were read; size gets the file's size. Opening the
  // file a second time and closing it would drop every POSIX lock this process holds on it
  // (they are per process), and another process would then delete the WAL this connection
  // still uses: the two would stop seeing each other's writes.
  std::size_t read_file_prefix(std::span<unsigned char> out, std::int64_t& size) const;

 protected:
  std::unique_ptr<Statement> make_statement(std::string_view sql) override;
  void begin_write() override;
  void commit() override;
  void rollback() noexcept override;

 private:
  struct Closer {
    void operator()(sqlite3* db) const noexcept;
  };
  std::unique_ptr<sqlite3, Closer> db_;
};

}  // namespace atvoss::db
