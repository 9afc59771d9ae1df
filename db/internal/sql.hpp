// The SQL layer the stores are written against: a Connection hands out prepared
// Statements and runs write transactions with retry. Two drivers implement it:
// db/internal/sqlite.hpp (the embedded file) and db/internal/postgres.hpp (a server).
// The stores write one SQL text for both: parameters are spelled ?1, ?2, ... (the
// PostgreSQL driver renames them $1, $2, ...), and the few places where the dialects
// differ ask Connection::dialect(). Internal to db/ (TuningDatabase is the API).
//
// Threading rule: a Connection and everything it hands out belong to one thread.
//
// Retry: a lock held too long, a serialization failure or a deadlock surface as BusyError.
// Connection::write() runs a body inside a transaction and, on BusyError, rolls back, backs
// off and runs the body again until the lock-wait budget has passed; read() does the same
// without a transaction. So a body must be safe to run more than once (it only touches the
// database, or state it rebuilds on each run).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"

namespace atvoss::db {

// Someone else held what this transaction needed (a lock, or rows a concurrent transaction
// changed): running the transaction again may succeed.
class BusyError : public Error {
 public:
  explicit BusyError(const std::string& what) : Error(ErrorKind::io, what) {}
};

enum class Dialect { sqlite, postgres };

class Statement {
 public:
  virtual ~Statement() = default;
  Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based (?1 is index 1). An unbound parameter is NULL.
  virtual Statement& bind(int index, std::int64_t value) = 0;
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  virtual Statement& bind(int index, double value) = 0;
  virtual Statement& bind(int index, std::string_view text) = 0;  // copied
  Statement& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  // No copy where the driver allows it: REQUIRES text to outlive the next step()/reset().
  virtual Statement& bind_static(int index, std::string_view text) { return bind(index, text); }
  virtual Statement& bind_blob(int index, std::span<const std::uint8_t> bytes) = 0;
  virtual Statement& bind_null(int index) = 0;

  // true: a row is ready; false: done. Throws (BusyError on a lock) otherwise.
  virtual bool step() = 0;
  // Runs to completion, ignoring rows.
  void run() {
    while (step()) {
    }
  }
  // Clears the last run and the bindings so the statement can be used again.
  virtual void reset() noexcept = 0;

  virtual bool is_null(int col) const = 0;
  virtual std::int64_t column_int64(int col) const = 0;
  virtual double column_double(int col) const = 0;
  virtual std::string column_text(int col) const = 0;
  virtual std::vector<std::uint8_t> column_blob(int col) const = 0;

  bool in_use() const { return in_use_; }
  void set_in_use(bool v) { in_use_ = v; }

 private:
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
  // name: what errors call the database (a path, or a URL without secrets).
  Connection(std::string name, int lock_wait_ms) : name_(std::move(name)), lock_wait_ms_(lock_wait_ms) {}
  virtual ~Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& path() const { return name_; }
  int lock_wait_ms() const { return lock_wait_ms_; }
  virtual Dialect dialect() const = 0;

  // The cached prepared statement for sql (prepared on first use).
  StatementRef prepare(std::string_view sql);
  // Runs one or more statements without results.
  virtual void exec(std::string_view sql) = 0;
  // Single integer result of a query such as "SELECT count(*) FROM records" (0 if no row).
  virtual std::int64_t query_int(std::string_view sql);

  // body() inside a write transaction, retried on BusyError (see the top comment).
  // Called from inside another write's body, it joins that transaction: body() runs
  // once, and its writes commit or roll back with the enclosing ones.
  template <typename Body>
  auto write(Body&& body) -> std::invoke_result_t<Body&>;
  // body() retried on BusyError, outside any explicit transaction.
  template <typename Body>
  auto read(Body&& body) -> std::invoke_result_t<Body&>;

  virtual bool in_transaction() const = 0;
  // Rows changed by the last INSERT/UPDATE/DELETE, and the id of the row the last INSERT
  // added.
  virtual std::int64_t changes() const = 0;
  virtual std::int64_t last_insert_rowid() = 0;
  // Appended to a SELECT that reads rows the transaction will update: PostgreSQL locks
  // them (FOR UPDATE) so that two writers combining one record cannot lose an update;
  // SQLite's write transaction already excludes every other writer.
  std::string_view lock_rows() const { return dialect() == Dialect::postgres ? " FOR UPDATE" : ""; }

 protected:
  virtual std::unique_ptr<Statement> make_statement(std::string_view sql) = 0;
  // Opens a write transaction (the driver's strongest form that still lets readers in).
  virtual void begin_write() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;
  // Finalizes every cached statement; a driver calls it before it closes its handle.
  void clear_statements() { cache_.clear(); }

 private:
  // Begins on construction, rolls back on destruction unless commit() succeeded.
  class Transaction {
   public:
    explicit Transaction(Connection& c) : c_(c) { c_.begin_write(); }
    ~Transaction() {
      if (!done_) c_.rollback();
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit() {
      c_.commit();
      done_ = true;
    }

   private:
    Connection& c_;
    bool done_ = false;
  };
  // Sleeps before retry attempt n, or throws the final "database is busy" error.
  void back_off(int attempt, std::chrono::steady_clock::time_point deadline, const BusyError& cause) const;

  std::string name_;
  int lock_wait_ms_;
  int write_depth_ = 0;  // 1 while a write() body runs; write() called inside it joins
  // Transparent hash: looking a statement up by its SQL text allocates nothing.
  struct SqlHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::unique_ptr<Statement>, SqlHash, std::equal_to<>> cache_;
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
      Transaction txn(*this);
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
