// Small RAII layer over the SQLite C API for the tuning database: a Connection owns one
// sqlite3 handle and its prepared-statement cache; a Statement is one prepared statement;
// a Transaction rolls back unless committed. Internal to db/ (TuningDatabase is the API).
//
// Threading rule: a Connection and everything it hands out belong to one thread.
//
// Locking: SQLITE_BUSY / SQLITE_LOCKED surface as BusyError. Connection::write() runs a
// body inside BEGIN IMMEDIATE ... COMMIT and, on BusyError, rolls back, backs off and
// runs the body again until OpenOptions::lock_wait_ms has passed; read() does the same
// without a transaction. So a body must be safe to run more than once (it only touches
// the database, or state it rebuilds on each run).
#pragma once

#include <chrono>
#include <functional>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace atvoss::db {

// The lock was held by someone else for longer than the busy handler waited.
class BusyError : public Error {
 public:
  explicit BusyError(const std::string& what) : Error(ErrorKind::io, what) {}
};

// Throws the Error matching an SQLite result code: BusyError for BUSY/LOCKED, corrupt for
// CORRUPT/NOTADB, io otherwise. context says what was being done.
[[noreturn]] void throw_sqlite(int rc, sqlite3* db, std::string_view context);

class Statement {
 public:
  Statement(sqlite3* db, std::string_view sql);  // prepares; throws on a bad statement
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQLite.
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view text);  // copied by SQLite (SQLITE_TRANSIENT)
  Statement& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  // No copy: REQUIRES text to outlive the statement's next step()/reset().
  Statement& bind_static(int index, std::string_view text);
  Statement& bind_blob(int index, std::span<const std::uint8_t> bytes);
  Statement& bind_null(int index);

  // true: a row is ready; false: done. Throws (BusyError on a lock) otherwise.
  bool step();
  // Runs to completion, ignoring rows.
  void run();
  // Clears the last run and the bindings so the statement can be used again.
  void reset() noexcept;

  bool is_null(int col) const;
  std::int64_t column_int64(int col) const;
  double column_double(int col) const;
  std::string column_text(int col) const;
  std::vector<std::uint8_t> column_blob(int col) const;

  bool in_use() const { return in_use_; }
  void set_in_use(bool v) { in_use_ = v; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  bool in_use_ = false;
};

// A statement borrowed from a Connection's cache; reset and given back when it goes out of
// scope. If the cached one is already borrowed (nested use), a private one is prepared.
class StatementRef {
 public:
  StatementRef(Statement* cached, std::unique_ptr<Statement> owned);
  ~StatementRef();
  StatementRef(StatementRef&& other) noexcept;
  StatementRef(const StatementRef&) = delete;
  StatementRef& operator=(const StatementRef&) = delete;
  StatementRef& operator=(StatementRef&&) = delete;
  Statement& operator*() const { return *stmt_; }
  Statement* operator->() const { return stmt_; }

 private:
  Statement* stmt_;
  std::unique_ptr<Statement> owned_;
};

class Connection {
 public:
  // flags: SQLite open flags. Applies the busy timeout. Throws io (or corrupt) on failure.
  Connection(const std::string& path, int flags, int lock_wait_ms);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* handle() const { return db_.get(); }
  const std::string& path() const { return path_; }

  // The cached prepared statement for sql (prepared on first use).
  StatementRef prepare(std::string_view sql);
  // Runs one or more statements without results.
  void exec(std::string_view sql);
  // Single integer result of a query such as "PRAGMA user_version".
  std::int64_t query_int(std::string_view sql);

  // body() inside BEGIN IMMEDIATE..COMMIT, retried on BusyError (see the top comment).
  // Called from inside another write's body, it joins that transaction: body() runs
  // once, and its writes commit or roll back with the enclosing ones.
  template <typename Body>
  auto write(Body&& body) -> std::invoke_result_t<Body&>;
  // body() retried on BusyError, outside any explicit transaction.
  template <typename Body>
  auto read(Body&& body) -> std::invoke_result_t<Body&>;

  bool in_transaction() const;
  // Rows changed by the last INSERT/UPDATE/DELETE, and the rowid of the last INSERT.
  std::int64_t changes() const;
  std::int64_t last_insert_rowid() const;

 private:
  struct Closer {
    void operator()(sqlite3* db) const noexcept;
  };
  // Sleeps before retry attempt n, or throws the final "database is busy" error.
  void back_off(int attempt, std::chrono::steady_clock::time_point deadline,
                const BusyError& cause) const;

  std::unique_ptr<sqlite3, Closer> db_;
  std::string path_;
  int lock_wait_ms_;
  int write_depth_ = 0;  // 1 while a write() body runs; write() called inside it joins
  // Transparent hash: looking a statement up by its SQL text allocates nothing.
  struct SqlHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  std::unordered_map<std::string, std::unique_ptr<Statement>, SqlHash, std::equal_to<>> cache_;
};

// Begins on construction, rolls back on destruction unless commit() succeeded.
class Transaction {
 public:
  enum class Mode { deferred, immediate };
  Transaction(Connection& conn, Mode mode);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection& conn_;
  bool done_ = false;
};

template <typename Body>
auto Connection::write(Body&& body) -> std::invoke_result_t<Body&> {
  if (write_depth_ > 0) return body();
  struct Depth {
    int& n;
    explicit Depth(int& d) : n(++d) {}
    ~Depth() { --n; }
  } depth(write_depth_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(lock_wait_ms_);
  for (int attempt = 0;; ++attempt) {
    try {
      Transaction txn(*this, Transaction::Mode::immediate);
      if constexpr (std::is_void_v<std::invoke_result_t<Body&>>) {
        body();
        txn.commit();
        return;
      } else {
        auto result = body();
        txn.commit();
        return result;
      }
    } catch (const BusyError& e) {
      back_off(attempt, deadline, e);
    }
  }
}

template <typename Body>
auto Connection::read(Body&& body) -> std::invoke_result_t<Body&> {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(lock_wait_ms_);
  for (int attempt = 0;; ++attempt) {
    try {
      return body();
    } catch (const BusyError& e) {
      back_off(attempt, deadline, e);
    }
  }
}

}  // namespace atvoss::db
