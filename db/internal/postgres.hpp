// The PostgreSQL driver of the SQL layer (db/internal/sql.hpp), over libpq. A
// PostgresConnection owns one PGconn; a statement is a server-side prepared statement
// (PQprepare), its ?N parameters renamed $N. Values travel as text (doubles in their
// shortest round-trip form, so a time reads back bit for bit), blobs as binary.
// Write transactions are READ COMMITTED; rows about to be updated are locked with
// Connection::lock_rows(). Serialization failures, deadlocks and lock timeouts are
// BusyError, so write() retries them. Internal to db/.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db/internal/sql.hpp"

struct pg_conn;
struct pg_result;

namespace atvoss::db {

class PostgresConnection;

class PostgresStatement final : public Statement {
 public:
  PostgresStatement(PostgresConnection& conn, std::string name, int n_params, std::string sql);
  ~PostgresStatement() override;

  using Statement::bind;
  Statement& bind(int index, std::int64_t value) override;
  Statement& bind(int index, double value) override;
  Statement& bind(int index, std::string_view text) override;
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
  struct Param {
    std::optional<std::string> value;  // nullopt: NULL
    bool binary = false;
  };
  Param& param(int index);
  std::string_view cell(int col) const;
  void execute();

  PostgresConnection& conn_;
  std::string name_;
  std::string sql_;
  std::vector<Param> params_;
  int prepared_generation_ = -1;  // the connection's generation it was prepared in
  pg_result* result_ = nullptr;
  int row_ = -1;
  bool executed_ = false;
};

class PostgresConnection final : public Connection {
 public:
  // url: a postgresql:// URL without a password (checked by the caller). Throws io naming
  // the URL and libpq's reason when the server cannot be reached or refuses the login.
  PostgresConnection(const std::string& url, int lock_wait_ms);
  ~PostgresConnection() override;

  Dialect dialect() const override { return Dialect::postgres; }
  void exec(std::string_view sql) override;
  std::int64_t query_int(std::string_view sql) override;  // unnamed: nothing stays prepared
  bool in_transaction() const override;
  std::int64_t changes() const override { return changes_; }
  std::int64_t last_insert_rowid() override;

  pg_conn* handle() const { return conn_; }
  bool closing() const { return closing_; }
  // Session settings applied now and again after every reconnect ("SET ...; SET ...").
  void set_session(std::string settings);
  // Prepares a statement in this session unless prepared_generation says it already is.
  // Outside a transaction, a connection the server dropped is first reset (its session's
  // prepared statements are gone, so each is prepared again on its next use).
  void ensure_prepared(const std::string& name, const std::string& sql, int n_params, int& prepared_generation);
  // Checks a finished command; throws the matching Error (BusyError when retrying may help).
  // Takes ownership of result.
  pg_result* check(pg_result* result, std::string_view what);
  void set_changes(std::int64_t n) { changes_ = n; }

 protected:
  std::unique_ptr<Statement> make_statement(std::string_view sql) override;
  void begin_write() override;
  void commit() override;
  void rollback() noexcept override;

 private:
  void ensure_connected();
  void configure_session();

  pg_conn* conn_ = nullptr;
  std::string session_;
  std::int64_t changes_ = 0;
  int next_statement_ = 0;
  int generation_ = 0;  // bumped by every reconnect
  bool closing_ = false;
};

// sql with ?N parameters renamed $N (outside quoted text), and the largest N.
std::pair<std::string, int> postgres_parameters(std::string_view sql);

}  // namespace atvoss::db
