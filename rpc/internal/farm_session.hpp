// The farm server's connections and shared state, for the Coordinator (coordinator.cpp):
//   Session  one TCP connection: hello/login handshake, frame reading, ordered writes
//   Farm     the shell around FarmState (rpc/farm_state.hpp, every rule of the farm): feeds it
//            events from the sessions and the sweep timer and carries out the actions it
//            returns (sends, closes, farm-log writes)
// Locking: Farm::mu_ guards the FarmState and the session table. Actions are carried out
// under mu_, so the messages of one event reach a session in the order the state made
// them; Session::send() only posts to the session's strand, so nothing blocks under mu_.
// Private to rpc/.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio.hpp>

#include "core/json.hpp"
#include "rpc/coordinator.hpp"
#include "rpc/farm_log.hpp"
#include "rpc/farm_state.hpp"
#include "rpc/internal/admission_gate.hpp"
#include "rpc/metrics.hpp"

namespace atvoss::rpc::farm {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

class Farm;

// One connection. Owned by shared_ptrs held by its own coroutine and by Farm::sessions_.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Farm& farm, tcp::socket socket, std::uint64_t id)
      : farm_(farm),
        socket_(std::move(socket)),
        strand_(asio::make_strand(socket_.get_executor())),
        login_timer_(strand_),
        linger_timer_(strand_),
        id_(id) {}

  void start();
  // Queues bytes for writing in order. Thread-safe.
  void send(std::string bytes);
  // Sends bytes (an error frame), then closes once written (or after 2 s). Thread-safe.
  void send_and_close(std::string bytes);
  // Closes now; the read loop ends and Farm::on_closed runs once. Thread-safe.
  void close();
  // Ends a connection still waiting to log in with `busy` (AdmissionGate). Thread-safe.
  void evict();

  std::uint64_t id() const { return id_; }
  std::uint64_t ticket() const { return ticket_; }
  void set_ticket(std::uint64_t ticket) { ticket_ = ticket; }
  Role role() const { return role_; }
  bool logged_in() const { return logged_in_; }
  const std::string& peer() const { return peer_; }

 private:
  asio::awaitable<void> run();
  asio::awaitable<void> serve();
  void handle_login(const Json& message);
  // On strand: sends an error frame and closes (fail) / sends bytes and closes (end_with).
  void fail(std::string_view code, const std::string& why);
  void end_with(std::string bytes);
  void write_some();  // on strand
  void close_now();   // on strand
  void linger();      // on strand: close after the last write, bounded in time

  Farm& farm_;
  tcp::socket socket_;
  asio::strand<tcp::socket::executor_type> strand_;
  asio::steady_timer login_timer_;
  asio::steady_timer linger_timer_;
  std::uint64_t id_;
  std::uint64_t ticket_ = 0;  // its place among the connections waiting to log in
  std::string peer_;
  std::string nonce_;
  Role role_ = Role::client;
  // Set on the strand, read by the sweep on any thread; role_ is written before it.
  std::atomic<bool> logged_in_{false};
  bool ending_ = false;  // no further messages are handled
  // Write state, touched only on strand_.
  std::string pending_, writing_;
  bool write_active_ = false, close_after_write_ = false, closed_ = false;
  std::vector<char> read_buffer_ = std::vector<char>(64 * 1024);
};

class Farm {
 public:
  Farm(const CoordinatorOptions& options, asio::io_context& io)
      : options_(options),
        io_(io),
        state_(
            FarmRules{options.heartbeat_interval, options.missed_heartbeats, options.max_retries, options.task_lease},
            [] { return Clock::now(); }, metrics_) {}

  const CoordinatorOptions& options() const { return options_; }
  asio::io_context& io() { return io_; }
  FarmMetrics& metrics() { return metrics_; }

  // Registers a new connection among those waiting to log in; when their places are full
  // the oldest waiting one is evicted (rpc/internal/admission_gate.hpp).
  void add_session(const std::shared_ptr<Session>& s, const std::string& address) {
    s->set_ticket(waiting_.admit(address, [weak = std::weak_ptr(s)] {
      if (auto evicted = weak.lock()) evicted->evict();
    }));
    const std::lock_guard lock(mu_);
    sessions_[s->id()] = s;
  }
  // False if the session was evicted before its login arrived.
  bool pass_login(const Session& s) { return waiting_.pass(s.ticket()); }
  void on_login(const std::shared_ptr<Session>& s) {
    const std::lock_guard lock(mu_);
    carry_out(state_.on_connected(s->id(), s->role(), s->peer()));
  }
  // Error(protocol) from the state closes the session (Session::run). A stats request
  // is answered here: the stats count connections, which only the shell knows.
  void on_message(const std::shared_ptr<Session>& s, Json& message) {
    if (message.at("type") == "stats") {
      s->send(encode_frame(Json{{"type", "stats"}, {"stats", stats()}}));
      return;
    }
    const std::lock_guard lock(mu_);
    carry_out(state_.on_message(s->id(), message));
  }
  void on_closed(const Session& s) {
    const std::lock_guard lock(mu_);
    sessions_.erase(s.id());
    changed_.notify_all();
    if (!s.logged_in()) {
      waiting_.leave(s.ticket());
      return;
    }
    carry_out(state_.on_disconnected(s.id()));
  }
  void sweep() {
    const std::lock_guard lock(mu_);
    carry_out(state_.on_tick());
  }
  // Shutdown waits for these without polling: every event that changes the task list or the
  // sessions notifies changed_.
  void wait_drained(Clock::time_point deadline) {
    std::unique_lock lock(mu_);
    changed_.wait_until(lock, deadline, [this] { return state_.drained(); });
  }
  void wait_sessions_closed(Clock::time_point deadline) {
    std::unique_lock lock(mu_);
    changed_.wait_until(lock, deadline, [this] { return sessions_.empty(); });
  }
  void expire_all(std::string_view why) {
    const std::lock_guard lock(mu_);
    carry_out(state_.expire_all(why));
  }
  std::vector<std::shared_ptr<Session>> all_sessions() const {
    const std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<Session>> out;
    for (const auto& [id, s] : sessions_) out.push_back(s);
    return out;
  }
  void set_draining() {
    const std::lock_guard lock(mu_);
    state_.set_draining();
  }
  void set_log(std::unique_ptr<FarmLog> log) { log_ = std::move(log); }
  Json stats() const {
    const std::lock_guard lock(mu_);
    Json out = state_.stats();
    out["sessions"] = sessions_.size();
    return out;
  }
  std::string metrics_text() const;

 private:
  // REQUIRES: mu_.
  void carry_out(FarmActions actions) {
    changed_.notify_all();
    for (FarmActions::Send& send : actions.sends) {
      if (const auto s = sessions_.find(send.to); s != sessions_.end()) s->second->send(encode_frame(send.message));
    }
    for (const SessionId id : actions.closes) {
      if (const auto s = sessions_.find(id); s != sessions_.end()) s->second->close();
    }
    if (!log_) return;
    for (const FarmActions::TargetNote& t : actions.targets) log_->note_target(t.key, t.name, t.description);
    for (const FarmActions::Record& r : actions.records) log_->record(r.target, r.request, r.measurement);
  }

  const CoordinatorOptions& options_;
  asio::io_context& io_;
  FarmMetrics metrics_;
  std::unique_ptr<FarmLog> log_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  FarmState state_;
  std::unordered_map<SessionId, std::shared_ptr<Session>> sessions_;
  AdmissionGate waiting_{AdmissionLimits{options_.max_unauthenticated, options_.max_unauthenticated_per_address}};
};

}  // namespace atvoss::rpc::farm
