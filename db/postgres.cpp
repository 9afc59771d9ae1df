#include "db/internal/postgres.hpp"

#include <libpq-fe.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/utf8.hpp"

namespace atvoss::db {
namespace {

// SQLSTATE classes after which running the transaction again may succeed: serialization
// failure and deadlock (40), lock not available (55P03), a server shutting down or
// restarting (57P01..57P03), and connection failures (08).
bool retryable(std::string_view state) {
  return state.starts_with("40") || state == "55P03" || state.starts_with("57P0") || state.starts_with("08");
}

// PostgreSQL text columns hold UTF-8 without NUL bytes; a compiler's message may hold
// either. Such bytes become U+FFFD instead of failing the whole batch.
bool valid_utf8(std::string_view s) { return s.find('\0') == std::string_view::npos && is_valid_utf8(s); }

std::string to_utf8_text(std::string_view s) {
  if (valid_utf8(s)) return std::string(s);
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c != 0 && c < 0x80) {
      out += ch;
    } else {
      out += "\xEF\xBF\xBD";
    }
  }
  return out;
}

std::string format_double(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;  // shortest round-trip
  return std::string(buf, end);
}

}  // namespace

std::pair<std::string, int> postgres_parameters(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  int largest = 0;
  bool quoted = false;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c == '\'') quoted = !quoted;
    if (c != '?' || quoted) {
      out += c;
      continue;
    }
    std::size_t j = i + 1;
    int n = 0;
    while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') n = n * 10 + (sql[j++] - '0');
    out += '$';
    out.append(sql.substr(i + 1, j - i - 1));
    largest = std::max(largest, n);
    i = j - 1;
  }
  return {out, largest};
}

// ---- PostgresStatement ---------------------------------------------------------------

PostgresStatement::PostgresStatement(PostgresConnection& conn, std::string name, int n_params, std::string sql)
    : conn_(conn), name_(std::move(name)), sql_(std::move(sql)), params_(static_cast<std::size_t>(n_params)) {}

PostgresStatement::~PostgresStatement() {
  PQclear(result_);
  // A statement prepared only for one nested use would otherwise stay on the server for
  // the session's life. Errors are ignored: a failed DEALLOCATE leaves nothing to undo.
  if (!conn_.closing() && prepared_generation_ >= 0) PQclear(PQexec(conn_.handle(), ("DEALLOCATE " + name_).c_str()));
}

PostgresStatement::Param& PostgresStatement::param(int index) {
  if (index < 1 || static_cast<std::size_t>(index) > params_.size()) {
    throw Error(ErrorKind::internal, "statement " + name_ + " has no parameter " + std::to_string(index));
  }
  return params_[static_cast<std::size_t>(index - 1)];
}

Statement& PostgresStatement::bind(int index, std::int64_t value) {
  param(index) = Param{std::to_string(value), false};
  return *this;
}

Statement& PostgresStatement::bind(int index, double value) {
  param(index) = Param{format_double(value), false};
  return *this;
}

Statement& PostgresStatement::bind(int index, std::string_view text) {
  param(index) = Param{to_utf8_text(text), false};
  return *this;
}

Statement& PostgresStatement::bind_blob(int index, std::span<const std::uint8_t> bytes) {
  param(index) = Param{std::string(bytes.begin(), bytes.end()), true};
  return *this;
}

Statement& PostgresStatement::bind_null(int index) {
  param(index) = Param{};
  return *this;
}

void PostgresStatement::execute() {
  std::vector<const char*> values(params_.size());
  std::vector<int> lengths(params_.size());
  std::vector<int> formats(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    values[i] = params_[i].value ? params_[i].value->data() : nullptr;
    lengths[i] = params_[i].value ? static_cast<int>(params_[i].value->size()) : 0;
    formats[i] = params_[i].binary ? 1 : 0;
  }
  conn_.ensure_prepared(name_, sql_, static_cast<int>(params_.size()), prepared_generation_);
  PGresult* r = PQexecPrepared(conn_.handle(), name_.c_str(), static_cast<int>(params_.size()), values.data(),
                               lengths.data(), formats.data(), 0);
  result_ = conn_.check(r, "running '" + sql_.substr(0, 60) + "'");
  const std::string_view tag = PQcmdStatus(result_);
  if (tag.starts_with("INSERT") || tag.starts_with("UPDATE") || tag.starts_with("DELETE")) {
    conn_.set_changes(std::atoll(PQcmdTuples(result_)));
  }
  executed_ = true;
}

bool PostgresStatement::step() {
  if (!executed_) execute();
  if (row_ + 1 >= PQntuples(result_)) return false;
  ++row_;
  return true;
}

void PostgresStatement::reset() noexcept {
  PQclear(result_);
  result_ = nullptr;
  row_ = -1;
  executed_ = false;
  for (Param& p : params_) p = Param{};
}

std::string_view PostgresStatement::cell(int col) const {
  return std::string_view(PQgetvalue(result_, row_, col), static_cast<std::size_t>(PQgetlength(result_, row_, col)));
}

bool PostgresStatement::is_null(int col) const { return PQgetisnull(result_, row_, col) == 1; }

std::int64_t PostgresStatement::column_int64(int col) const {
  const std::string_view text = cell(col);
  std::int64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);  // NULL reads as 0, as in SQLite
  return v;
}

double PostgresStatement::column_double(int col) const {
  const std::string_view text = cell(col);
  double v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

std::string PostgresStatement::column_text(int col) const { return std::string(cell(col)); }

std::vector<std::uint8_t> PostgresStatement::column_blob(int col) const {
  std::size_t n = 0;
  unsigned char* raw = PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(result_, row_, col)), &n);
  if (raw == nullptr) throw Error(ErrorKind::io, "out of memory decoding a stored blob");
  std::vector<std::uint8_t> out(raw, raw + n);
  PQfreemem(raw);
  return out;
}

// ---- PostgresConnection --------------------------------------------------------------

PostgresConnection::PostgresConnection(const std::string& url, int lock_wait_ms) : Connection(url, lock_wait_ms) {
  // Defaults first, so that the URL may override them.
  const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {"10", "atvoss", url.c_str(), nullptr};
  conn_ = PQconnectdbParams(keys, values, 1);
  if (conn_ == nullptr) throw Error(ErrorKind::io, "cannot connect to " + url + ": out of memory");
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string why = PQerrorMessage(conn_);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    PQfinish(conn_);
    conn_ = nullptr;
    throw Error(ErrorKind::io, "cannot connect to database " + url + ": " + why);
  }
  // libpq prints server notices to stderr by default; a library must not.
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
  configure_session();
}

PostgresConnection::~PostgresConnection() {
  closing_ = true;
  clear_statements();
  PQfinish(conn_);
}

void PostgresConnection::set_session(std::string settings) {
  session_ = std::move(settings);
  configure_session();
}

void PostgresConnection::configure_session() {
  // How long one lock wait may last before it is a BusyError; write() retries until the
  // same budget is spent, as the SQLite driver's busy timeout does.
  exec("SET lock_timeout = " + std::to_string(std::max(1, lock_wait_ms())) + "; " + session_);
}

void PostgresConnection::ensure_connected() {
  if (PQstatus(conn_) == CONNECTION_OK) return;
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    throw BusyError("the server of " + path() + " is unreachable: " + std::string(PQerrorMessage(conn_)));
  }
  ++generation_;  // every prepared statement died with the old session
  configure_session();
}

void PostgresConnection::ensure_prepared(const std::string& name, const std::string& sql, int n_params,
                                         int& prepared_generation) {
  if (!in_transaction()) ensure_connected();
  if (prepared_generation == generation_) return;
  PQclear(
      check(PQprepare(conn_, name.c_str(), sql.c_str(), n_params, nullptr), "preparing '" + sql.substr(0, 60) + "'"));
  prepared_generation = generation_;
}

std::unique_ptr<Statement> PostgresConnection::make_statement(std::string_view sql) {
  auto [text, n] = postgres_parameters(sql);
  return std::make_unique<PostgresStatement>(*this, "atvoss_" + std::to_string(next_statement_++), n, std::move(text));
}

pg_result* PostgresConnection::check(pg_result* r, std::string_view what) {
  const ExecStatusType st = PQresultStatus(r);
  if (r != nullptr && (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)) return r;
  std::string why = r != nullptr ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
  const char* code = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string state = code != nullptr ? code : "";
  PQclear(r);
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  const std::string text = std::string(what) + " on " + path() + ": " + why;
  if (PQstatus(conn_) != CONNECTION_OK) {
    throw BusyError("lost the connection to the server (" + text + ")");
  }
  if (retryable(state)) throw BusyError(text);
  if (state.starts_with("XX00")) throw Error(ErrorKind::corrupt, text);
  if (state.starts_with("53")) throw Error(ErrorKind::io, text + " (the server is out of resources)");
  if (state == "25006") throw Error(ErrorKind::io, text + " (the database was opened read-only)");
  throw Error(state.starts_with("42") || state.starts_with("23") ? ErrorKind::internal : ErrorKind::io, text);
}

void PostgresConnection::exec(std::string_view sql) {
  if (!in_transaction()) ensure_connected();
  PQclear(check(PQexec(conn_, std::string(sql).c_str()), "'" + std::string(sql.substr(0, 60)) + "'"));
}

std::int64_t PostgresConnection::query_int(std::string_view sql) {
  if (!in_transaction()) ensure_connected();
  PGresult* r = check(PQexec(conn_, std::string(sql).c_str()), "'" + std::string(sql.substr(0, 60)) + "'");
  std::int64_t v = 0;
  if (PQntuples(r) > 0 && PQnfields(r) > 0) {
    const char* text = PQgetvalue(r, 0, 0);
    std::from_chars(text, text + PQgetlength(r, 0, 0), v);
  }
  PQclear(r);
  return v;
}

bool PostgresConnection::in_transaction() const {
  const PGTransactionStatusType t = PQtransactionStatus(conn_);
  return t == PQTRANS_INTRANS || t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}

std::int64_t PostgresConnection::last_insert_rowid() { return query_int("SELECT lastval()"); }

void PostgresConnection::begin_write() { exec("BEGIN"); }

void PostgresConnection::commit() { exec("COMMIT"); }

void PostgresConnection::rollback() noexcept {
  if (PQstatus(conn_) == CONNECTION_OK) PQclear(PQexec(conn_, "ROLLBACK"));
}

}  // namespace atvoss::db
