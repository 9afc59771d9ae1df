#include "db/internal/sql.hpp"

#include <algorithm>
#include <random>
#include <thread>

namespace atvoss::db {

StatementRef::StatementRef(Statement* cached, std::unique_ptr<Statement> owned)
    : stmt_(owned ? owned.get() : cached), owned_(std::move(owned)) {
  if (!owned_) stmt_->set_in_use(true);
}

StatementRef::~StatementRef() {
  if (stmt_ == nullptr) return;
  stmt_->reset();
  if (!owned_) stmt_->set_in_use(false);
}

StatementRef::StatementRef(StatementRef&& other) noexcept : stmt_(other.stmt_), owned_(std::move(other.owned_)) {
  other.stmt_ = nullptr;
}

StatementRef Connection::prepare(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) it = cache_.emplace(std::string(sql), make_statement(sql)).first;
  if (it->second->in_use()) return StatementRef(nullptr, make_statement(sql));
  return StatementRef(it->second.get(), nullptr);
}

std::int64_t Connection::query_int(std::string_view sql) {
  const auto stmt = make_statement(sql);
  if (!stmt->step()) return 0;
  return stmt->column_int64(0);
}

void Connection::back_off(int attempt, std::chrono::steady_clock::time_point deadline, const BusyError& cause) const {
  if (std::chrono::steady_clock::now() >= deadline) {
    throw Error(ErrorKind::io, "database is busy: " + name_ + " stayed locked by another writer for " +
                                   std::to_string(lock_wait_ms_) + " ms (" + cause.what() + ")");
  }
  // Jittered exponential back-off so that competing writers do not retry in lock step.
  thread_local std::mt19937_64 rng(std::random_device{}());
  const int cap = std::min(50, 1 << std::min(attempt, 6));
  std::this_thread::sleep_for(std::chrono::milliseconds(1 + static_cast<int>(rng() % cap)));
}

}  // namespace atvoss::db
