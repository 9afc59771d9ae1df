// Coordinator implementation. Read in this order:
//   Session      one TCP connection: hello/login handshake, frame reading, ordered writes
//   Farm         the shared state (workers, tasks, queues) and every rule of the farm:
//                on_submit -> dispatch -> on_results -> relay; remove_worker requeues
//   Coordinator  lifetime: start, sweep timer, graceful shutdown, signals
// Locking: Farm::mu_ guards all farm state. Session::send() only posts to the session's
// strand, so it is safe (and cheap) to call with mu_ held; nothing blocks under mu_.
#include "rpc/coordinator.hpp"

#include <array>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/error.hpp"
#include "core/measurement.hpp"
#include "rpc/auth.hpp"
#include "rpc/farm_log.hpp"
#include "rpc/log.hpp"
#include "rpc/metrics.hpp"
#include "rpc/query_server.hpp"

namespace atvoss::rpc {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

class Farm;

// Unsent bytes one connection may queue before it counts as a stuck peer.
constexpr std::size_t kMaxPendingBytes = 256u << 20;
// Pause of the accept loop after a failed accept (file-descriptor limit and the like).
constexpr std::chrono::milliseconds kAcceptBackoff{100};

// Answers a connection over the unauthenticated limit with a `busy` error and closes it.
// Best effort and never blocking: the frame is small enough for any socket buffer.
void refuse_busy(tcp::socket& socket) {
  static const std::string kFrame = encode_frame(
      error_message(codes::busy, "too many connections waiting to log in; try again shortly"));
  boost::system::error_code ignored;
  socket.non_blocking(true, ignored);
  socket.write_some(asio::buffer(kFrame), ignored);
  socket.close(ignored);
}

// One connection. Owned by shared_ptrs held by its own coroutine and by Farm::sessions_.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Farm& farm, tcp::socket socket, std::uint64_t id)
      : farm_(farm), socket_(std::move(socket)), strand_(asio::make_strand(socket_.get_executor())),
        login_timer_(strand_), linger_timer_(strand_), id_(id) {}

  void start();
  // Queues bytes for writing in order. Thread-safe.
  void send(std::string bytes);
  // Sends bytes (an error frame), then closes once written (or after 2 s). Thread-safe.
  void send_and_close(std::string bytes);
  // Closes now; the read loop ends and Farm::on_closed runs once. Thread-safe.
  void close();

  std::uint64_t id() const { return id_; }
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
  void write_some();   // on strand
  void close_now();    // on strand
  void linger();       // on strand: close after the last write, bounded in time

  Farm& farm_;
  tcp::socket socket_;
  asio::strand<tcp::socket::executor_type> strand_;
  asio::steady_timer login_timer_;
  asio::steady_timer linger_timer_;
  std::uint64_t id_;
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

struct Waiter {
  std::uint64_t client = 0;  // session id
  Json item_id;              // the client's id for this item, echoed back
  Clock::time_point since;
};

struct QueuedTask {
  std::string identity;
  std::string target;
  Json request;  // the request body (bin, protocol.hpp): what the worker needs, opaque here
  int retries = 0;
  std::uint64_t worker = 0;  // session holding the lease; 0 while queued
  std::vector<Waiter> waiters;
};

struct WorkerState {
  std::shared_ptr<Session> session;
  std::vector<std::string> targets;
  std::vector<std::string> backends;  // as registered; empty from workers that name none
  std::string name;
  int slots = 1;
  std::unordered_set<std::uint64_t> in_flight;
  Clock::time_point last_seen;
  bool registered = false;
};

class Farm {
 public:
  Farm(const CoordinatorOptions& options, asio::io_context& io)
      : options_(options), io_(io), heartbeat_frame_(encode_frame(Json{{"type", "heartbeat"}})) {}

  const CoordinatorOptions& options() const { return options_; }
  asio::io_context& io() { return io_; }
  FarmMetrics& metrics() { return metrics_; }

  // Takes one of the max_unauthenticated places for a new connection; false when all are
  // taken (the caller refuses it). A place is given back by on_login or on_closed.
  // Logged-in sessions are not limited here: they proved the token.
  bool reserve_unauthenticated() {
    const std::lock_guard lock(mu_);
    if (unauthenticated_ >= options_.max_unauthenticated) return false;
    ++unauthenticated_;
    return true;
  }
  // REQUIRES: reserve_unauthenticated() returned true for this connection.
  void add_session(const std::shared_ptr<Session>& s) {
    const std::lock_guard lock(mu_);
    sessions_[s->id()] = s;
  }
  void on_login(const std::shared_ptr<Session>& s);
  void on_message(const std::shared_ptr<Session>& s, Json& message);
  void on_closed(const Session& s);
  void sweep();
  bool drained() const {
    const std::lock_guard lock(mu_);
    return tasks_.empty();
  }
  void expire_all(std::string_view why);
  std::vector<std::shared_ptr<Session>> all_sessions() const;
  std::size_t session_count() const {
    const std::lock_guard lock(mu_);
    return sessions_.size();
  }
  void set_draining() {
    const std::lock_guard lock(mu_);
    draining_ = true;
  }
  void set_log(std::unique_ptr<FarmLog> log) { log_ = std::move(log); }
  Json stats() const;
  std::string metrics_text() const;

 private:
  void on_register(WorkerState& w, const Json& message);
  void on_submit(const std::shared_ptr<Session>& s, Json& message);
  void on_results(WorkerState& w, std::uint64_t worker_id, const Json& message);
  void dispatch(const std::string& target);
  void remove_worker(std::uint64_t id);
  // Answers every waiter of task (then erases it). Adds to outbox; REQUIRES mu_.
  void relay(std::uint64_t task_id, const std::string& status, const Json& measurement);
  void flush_outbox();
  // Removes the queue entries of cancelled tasks (ids by target) and queues left empty,
  // so that queues_ holds only tasks that still wait. One pass per touched queue.
  void drop_queued(const std::unordered_map<std::string, std::unordered_set<std::uint64_t>>& cancelled);
  void answer_now(std::uint64_t client, const Json& item_id, Status status, const std::string& why);

  const CoordinatorOptions& options_;
  asio::io_context& io_;
  const std::string heartbeat_frame_;
  FarmMetrics metrics_;
  std::unique_ptr<FarmLog> log_;

  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Session>> sessions_;
  std::map<std::uint64_t, WorkerState> workers_;
  std::unordered_map<std::uint64_t, QueuedTask> tasks_;
  std::unordered_map<std::string, std::uint64_t> by_identity_;
  std::unordered_map<std::string, std::deque<std::uint64_t>> queues_;
  std::unordered_map<std::uint64_t, Json> outbox_;  // client session -> results array
  std::uint64_t next_task_ = 1;
  std::size_t unauthenticated_ = 0;  // sessions_ entries that have not logged in
  bool draining_ = false;
};

Json failure_body(Status status, std::string message) {
  return encode_body(Measurement::failed(status, std::move(message)).to_json());
}

// ---------------------------------------------------------------- Session

void Session::start() {
  auto self = shared_from_this();
  asio::co_spawn(strand_, run(), [self](std::exception_ptr e) {
    // run() catches everything it expects; anything else is a bug worth a log line.
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      log_line("farm", std::string("session ") + std::to_string(self->id_) + " crashed: " + ex.what());
    }
  });
}

void Session::send(std::string bytes) {
  asio::post(strand_, [self = shared_from_this(), b = std::move(bytes)]() mutable {
    if (self->closed_) return;
    if (self->pending_.size() + b.size() > kMaxPendingBytes) {
      // A peer that stops reading must not grow our memory without bound.
      log_line("farm", self->peer_ + " is not reading its answers; closing");
      self->close_now();
      return;
    }
    self->pending_ += b;
    if (!self->write_active_) self->write_some();
  });
}

void Session::send_and_close(std::string bytes) {
  asio::post(strand_, [self = shared_from_this(), b = std::move(bytes)]() mutable {
    self->end_with(std::move(b));
  });
}

void Session::end_with(std::string bytes) {
  if (closed_ || ending_) return;
  ending_ = true;
  pending_ += bytes;
  if (!write_active_) write_some();
  linger();
}

void Session::close() {
  asio::post(strand_, [self = shared_from_this()] { self->close_now(); });
}

void Session::write_some() {
  writing_.clear();
  writing_.swap(pending_);
  write_active_ = true;
  asio::async_write(socket_, asio::buffer(writing_),
                    asio::bind_executor(strand_, [self = shared_from_this()](
                                                     boost::system::error_code ec, std::size_t) {
                      self->write_active_ = false;
                      if (ec) {
                        self->close_now();
                      } else if (!self->pending_.empty()) {
                        self->write_some();
                      } else if (self->close_after_write_) {
                        self->close_now();
                      }
                    }));
}

void Session::linger() {
  if (!write_active_ && pending_.empty()) {
    close_now();
    return;
  }
  close_after_write_ = true;
  // A peer that stops reading must not pin the connection forever.
  linger_timer_.expires_after(std::chrono::seconds(2));
  linger_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->close_now();
  });
}

void Session::close_now() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  login_timer_.cancel();
  linger_timer_.cancel();
}

void Session::fail(std::string_view code, const std::string& why) {
  farm_.metrics().count_rejection(code);
  log_line("farm", "closing " + peer_ + " (" + std::string(code) + "): " + why);
  end_with(encode_frame(error_message(code, why)));
}

asio::awaitable<void> Session::run() {
  auto self = shared_from_this();
  try {
    co_await serve();
  } catch (const boost::system::system_error&) {
    // Disconnects and cancellation end the loop; nothing to report.
  } catch (const Error& e) {
    fail(e.kind() == ErrorKind::protocol ? codes::protocol : std::string_view("error"), e.what());
  } catch (const std::exception& e) {
    // nlohmann type errors from a field of the wrong type: the peer's fault, like a bad frame.
    fail(codes::protocol, std::string("malformed message: ") + e.what());
  }
  if (!ending_) close_now();
  farm_.on_closed(*this);
}

asio::awaitable<void> Session::serve() {
  boost::system::error_code ec;
  const auto remote = socket_.remote_endpoint(ec);
  if (ec) co_return;
  peer_ = remote.address().to_string() + ":" + std::to_string(remote.port());
  if (!farm_.options().token && !is_loopback_address(remote.address().to_string())) {
    fail(codes::loopback_only, "this farm has no token and serves loopback peers only");
    co_return;
  }
  nonce_ = make_nonce();
  send(encode_frame(Json{{"type", "hello"},
                         {"version", kProtocolVersion},
                         {"nonce", nonce_},
                         {"auth", farm_.options().token.has_value()}}));
  login_timer_.expires_after(farm_.options().login_timeout);
  login_timer_.async_wait([self = shared_from_this()](boost::system::error_code wait_ec) {
    if (!wait_ec && !self->logged_in_ && !self->ending_) {
      self->fail(codes::login_timeout, "no login within the login timeout");
    }
  });

  // Until the peer proves the token it may make us buffer one small frame, not 16 MiB.
  FrameDecoder decoder(std::min(farm_.options().max_login_frame_bytes, farm_.options().max_frame_bytes));
  for (;;) {
    const std::size_t n = co_await socket_.async_read_some(
        asio::buffer(read_buffer_), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (ec == asio::error::eof && decoder.buffered() > 0 && !ending_) {
        log_line("farm", peer_ + " closed inside a frame (" + std::to_string(decoder.buffered()) +
                             " bytes of a truncated frame dropped)");
        farm_.metrics().count_rejection("truncated_frame");
      }
      co_return;
    }
    if (ending_) continue;  // drain until the peer or the linger timer closes
    decoder.feed(read_buffer_.data(), n);
    while (!ending_) {
      std::optional<Json> message = decoder.next();  // throws Error(protocol)
      if (!message) break;
      if (!logged_in_) {
        handle_login(*message);
        if (logged_in_) decoder.set_max_frame_bytes(farm_.options().max_frame_bytes);
      } else {
        farm_.on_message(shared_from_this(), *message);
      }
    }
  }
}

void Session::handle_login(const Json& message) {
  if (message.at("type") != "login") {
    fail(codes::protocol, "the first message must be a login, got '" +
                              message.at("type").get<std::string>() + "'");
    return;
  }
  const auto version = message.find("version");
  if (version == message.end() || !version->is_number_integer() || *version != kProtocolVersion) {
    fail(codes::version_mismatch, "this farm speaks protocol version " +
                                      std::to_string(kProtocolVersion) + ", peer sent " +
                                      (version == message.end() ? "none" : version->dump()));
    return;
  }
  const auto role = message.find("role");
  if (role == message.end() || !role->is_string()) {
    fail(codes::protocol, "login: field 'role' must be a string");
    return;
  }
  role_ = parse_role(role->get<std::string>());  // Error(protocol) on unknown roles
  if (const auto& token = farm_.options().token) {
    const auto mac = message.find("mac");
    if (mac == message.end() || !mac->is_string() ||
        !verify_mac(*token, nonce_, mac->get<std::string>())) {
      fail(codes::auth_failed, "login: wrong or missing farm token");
      return;
    }
  }
  logged_in_ = true;
  login_timer_.cancel();
  send(encode_frame(Json{{"type", "welcome"},
                         {"version", kProtocolVersion},
                         {"session", id_},
                         {"heartbeat_ms", farm_.options().heartbeat_interval.count()}}));
  farm_.on_login(shared_from_this());
}

// ---------------------------------------------------------------- Farm

void Farm::on_login(const std::shared_ptr<Session>& s) {
  const std::lock_guard lock(mu_);
  --unauthenticated_;
  if (s->role() != Role::worker) return;
  WorkerState& w = workers_[s->id()];
  w.session = s;
  w.last_seen = Clock::now();
}

void Farm::on_message(const std::shared_ptr<Session>& s, Json& message) {
  const std::string& type = message.at("type").get_ref<const std::string&>();
  if (type == "heartbeat") {
    if (s->role() == Role::worker) {
      const std::lock_guard lock(mu_);
      if (auto it = workers_.find(s->id()); it != workers_.end()) it->second.last_seen = Clock::now();
    }
    return;
  }
  if (s->role() == Role::worker && (type == "register" || type == "results")) {
    const std::lock_guard lock(mu_);
    const auto it = workers_.find(s->id());
    if (it == workers_.end()) return;  // already removed (missed heartbeats): its lease is gone
    it->second.last_seen = Clock::now();
    if (type == "register") {
      on_register(it->second, message);
    } else {
      on_results(it->second, s->id(), message);
    }
    flush_outbox();
    return;
  }
  if (s->role() == Role::client && type == "submit") {
    on_submit(s, message);
    return;
  }
  if (type == "stats") {
    s->send(encode_frame(Json{{"type", "stats"}, {"stats", stats()}}));
    return;
  }
  throw Error(ErrorKind::protocol, "message type '" + type + "' is not allowed for role " +
                                       std::string(to_string(s->role())));
}

// The backends a worker says it measures with: optional (workers before the field
// existed send none), at most 16 names of at most 64 bytes each.
std::vector<std::string> registered_backends(const Json& message) {
  std::vector<std::string> out;
  const auto it = message.find("backends");
  if (it == message.end()) return out;
  if (!it->is_array() || it->size() > 16) {
    throw Error(ErrorKind::protocol, "register: 'backends' must be an array of at most 16 names");
  }
  for (const Json& b : *it) {
    if (!b.is_string() || b.get<std::string>().empty() || b.get<std::string>().size() > 64) {
      throw Error(ErrorKind::protocol, "register: 'backends' must hold names of 1..64 bytes");
    }
    out.push_back(b.get<std::string>());
  }
  return out;
}

void Farm::on_register(WorkerState& w, const Json& message) {
  const auto targets = message.find("targets");
  const auto slots = message.find("slots");
  if (targets == message.end() || !targets->is_array() || targets->empty() ||
      slots == message.end() || !slots->is_number_integer() || *slots < 1 || *slots > 4096) {
    throw Error(ErrorKind::protocol,
                "register: needs 'targets' (non-empty array of target keys) and 'slots' (1..4096)");
  }
  w.targets.clear();
  for (const Json& t : *targets) {
    if (!t.is_string()) throw Error(ErrorKind::protocol, "register: 'targets' must hold strings");
    w.targets.push_back(t.get<std::string>());
  }
  w.slots = slots->get<int>();
  w.name = message.value("name", std::string("worker"));
  w.backends = registered_backends(message);
  w.registered = true;
  if (log_ && message.contains("descriptions") && message["descriptions"].is_array()) {
    for (const Json& d : message["descriptions"]) {
      if (d.is_object() && d.value("key", Json()).is_string() && d.value("name", Json()).is_string()) {
        log_->note_target(d["key"].get<std::string>(), d["name"].get<std::string>(),
                          d.value("description", Json::object()));
      }
    }
  }
  log_line("farm", "worker " + w.name + " (" + w.session->peer() + ") registered " +
                       std::to_string(w.slots) + " slots");
  for (const std::string& t : w.targets) dispatch(t);
}

void Farm::on_submit(const std::shared_ptr<Session>& s, Json& message) {
  const auto items = message.find("items");
  if (items == message.end() || !items->is_array()) {
    throw Error(ErrorKind::protocol, "submit: field 'items' must be an array");
  }
  const auto now = Clock::now();
  const std::lock_guard lock(mu_);
  std::unordered_set<std::string> touched;
  for (Json& item : *items) {
    const Json item_id = item.is_object() ? item.value("id", Json()) : Json();
    if (draining_) {
      answer_now(s->id(), item_id, Status::session_timeout, "coordinator is shutting down");
      continue;
    }
    const auto target = item.is_object() ? item.find("target") : item.end();
    const auto request = item.is_object() ? item.find("request") : item.end();
    if (item_id.is_null() || target == item.end() || !target->is_string() || request == item.end() ||
        !request->is_binary()) {
      answer_now(s->id(), item_id, Status::error,
                 "submit: an item needs an id, a target key and a request body (bin)");
      continue;
    }
    // Identity = target + the request bytes: canonical, exact, and no JSON tree to build.
    std::string identity = target->get_ref<const std::string&>();
    identity += '\n';
    identity += body_bytes(*request);
    Waiter waiter{s->id(), item_id, now};
    metrics_.count_submitted();
    if (const auto found = by_identity_.find(identity); found != by_identity_.end()) {
      tasks_[found->second].waiters.push_back(std::move(waiter));
      metrics_.count_deduplicated();
      continue;
    }
    const std::uint64_t id = next_task_++;
    QueuedTask& task = tasks_[id];
    task.identity = identity;
    task.target = target->get<std::string>();
    task.request = std::move(*request);
    task.waiters.push_back(std::move(waiter));
    by_identity_.emplace(std::move(identity), id);
    queues_[task.target].push_back(id);
    touched.insert(task.target);
  }
  for (const std::string& t : touched) dispatch(t);
  flush_outbox();
}

void Farm::dispatch(const std::string& target) {
  auto queue_it = queues_.find(target);
  if (queue_it == queues_.end() || queue_it->second.empty()) return;
  std::deque<std::uint64_t>& queue = queue_it->second;
  std::vector<std::pair<WorkerState*, Json>> assigned;
  for (auto& [id, w] : workers_) {
    if (!w.registered || std::find(w.targets.begin(), w.targets.end(), target) == w.targets.end()) {
      continue;
    }
    if (static_cast<int>(w.in_flight.size()) < w.slots) assigned.emplace_back(&w, Json::array());
  }
  // Round robin, one task per worker per turn: spreads a batch over the free slots
  // instead of filling the first worker, and never past a worker's slot count.
  bool progress = true;
  while (!queue.empty() && progress) {
    progress = false;
    for (auto& [w, tasks] : assigned) {
      if (queue.empty()) break;
      if (static_cast<int>(w->in_flight.size()) >= w->slots) continue;
      const std::uint64_t id = queue.front();
      queue.pop_front();
      progress = true;
      const auto t = tasks_.find(id);
      if (t == tasks_.end() || t->second.worker != 0) continue;  // cancelled or stale entry
      t->second.worker = w->session->id();
      w->in_flight.insert(id);
      tasks.push_back(Json{{"id", id}, {"target", target}, {"request", t->second.request}});
    }
  }
  for (auto& [w, tasks] : assigned) {
    if (!tasks.empty()) w->session->send(encode_frame(Json{{"type", "tasks"}, {"tasks", std::move(tasks)}}));
  }
  // Targets come from clients: an empty queue left behind per target would grow forever.
  if (queue.empty()) queues_.erase(queue_it);
}

void Farm::on_results(WorkerState& w, std::uint64_t worker_id, const Json& message) {
  const auto results = message.find("results");
  if (results == message.end() || !results->is_array()) {
    throw Error(ErrorKind::protocol, "results: field 'results' must be an array");
  }
  for (const Json& r : *results) {
    if (!r.is_object() || !r.contains("id") || !r["id"].is_number_unsigned() || !r.contains("status") ||
        !r["status"].is_string() || !r.contains("measurement") || !r["measurement"].is_binary()) {
      throw Error(ErrorKind::protocol, "results: each entry needs an unsigned 'id', a string "
                                       "'status' and a 'measurement' body (bin)");
    }
    const std::uint64_t id = r["id"].get<std::uint64_t>();
    const auto t = tasks_.find(id);
    if (t == tasks_.end() || t->second.worker != worker_id) {
      metrics_.count_late_result();  // the lease moved on: another worker owns this task now
      continue;
    }
    w.in_flight.erase(id);
    relay(id, r["status"].get_ref<const std::string&>(), r["measurement"]);
  }
  for (const std::string& target : w.targets) dispatch(target);
}

void Farm::relay(std::uint64_t task_id, const std::string& status, const Json& measurement) {
  const auto t = tasks_.find(task_id);
  if (t == tasks_.end()) return;
  const auto now = Clock::now();
  metrics_.count_measured(status);
  for (const Waiter& waiter : t->second.waiters) {
    metrics_.add_latency(std::chrono::duration<double, std::micro>(now - waiter.since).count());
    Json& batch = outbox_[waiter.client];
    if (batch.is_null()) batch = Json::array();
    batch.push_back(Json{{"id", waiter.item_id}, {"status", status}, {"measurement", measurement}});
  }
  if (log_) log_->record(t->second.target, t->second.request, measurement);
  by_identity_.erase(t->second.identity);
  tasks_.erase(t);
}

void Farm::drop_queued(const std::unordered_map<std::string, std::unordered_set<std::uint64_t>>& cancelled) {
  for (const auto& [target, ids] : cancelled) {
    const auto q = queues_.find(target);
    if (q == queues_.end()) continue;
    std::erase_if(q->second, [&ids](std::uint64_t id) { return ids.contains(id); });
    if (q->second.empty()) queues_.erase(q);
  }
}

void Farm::answer_now(std::uint64_t client, const Json& item_id, Status status, const std::string& why) {
  metrics_.count_measured(to_string(status));
  Json& batch = outbox_[client];
  if (batch.is_null()) batch = Json::array();
  batch.push_back(Json{{"id", item_id}, {"status", to_string(status)}, {"measurement", failure_body(status, why)}});
}

void Farm::flush_outbox() {
  for (auto& [client, results] : outbox_) {
    const auto s = sessions_.find(client);
    if (s == sessions_.end()) continue;  // the client left; its answers go nowhere
    s->second->send(encode_frame(Json{{"type", "results"}, {"results", std::move(results)}}));
  }
  outbox_.clear();
}

void Farm::remove_worker(std::uint64_t id) {
  const auto it = workers_.find(id);
  if (it == workers_.end()) return;
  WorkerState w = std::move(it->second);
  workers_.erase(it);
  metrics_.count_worker_lost();
  log_line("farm", "worker " + w.name + " removed; requeueing " + std::to_string(w.in_flight.size()) +
                       " tasks");
  std::unordered_set<std::string> touched;
  for (const std::uint64_t task_id : w.in_flight) {
    const auto t = tasks_.find(task_id);
    if (t == tasks_.end()) continue;
    QueuedTask& task = t->second;
    task.worker = 0;
    if (++task.retries > options_.max_retries) {
      relay(task_id, "worker_lost",
            failure_body(Status::worker_lost, "lost with " + std::to_string(task.retries) +
                                                  " workers in turn; not a property of the schedule"));
      continue;
    }
    metrics_.count_retry();
    queues_[task.target].push_front(task_id);  // first in line: it has waited longest
    touched.insert(task.target);
  }
  for (const std::string& t : touched) dispatch(t);
}

void Farm::on_closed(const Session& s) {
  const std::lock_guard lock(mu_);
  sessions_.erase(s.id());
  if (!s.logged_in()) {
    --unauthenticated_;
    return;
  }
  if (s.role() == Role::worker) {
    remove_worker(s.id());
  } else if (s.role() == Role::client) {
    // Drop the client's waiters; a queued task nobody waits for any more is cancelled,
    // and so is its queue entry (else queues_ grows with every client that leaves).
    std::unordered_map<std::string, std::unordered_set<std::uint64_t>> cancelled;
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      auto& waiters = it->second.waiters;
      std::erase_if(waiters, [&](const Waiter& w) { return w.client == s.id(); });
      if (waiters.empty() && it->second.worker == 0) {
        cancelled[it->second.target].insert(it->first);
        by_identity_.erase(it->second.identity);
        it = tasks_.erase(it);
      } else {
        ++it;
      }
    }
    drop_queued(cancelled);
  }
  outbox_.erase(s.id());
  flush_outbox();
}

void Farm::sweep() {
  const auto now = Clock::now();
  const auto limit = options_.heartbeat_interval * options_.missed_heartbeats;
  const std::lock_guard lock(mu_);
  for (auto& [id, w] : workers_) {
    if (now - w.last_seen > limit) {
      log_line("farm", "worker " + w.name + " missed " + std::to_string(options_.missed_heartbeats) +
                           " heartbeats");
      w.session->close();  // on_closed then removes it and requeues its tasks
      w.last_seen = now;   // do not close twice while the close is in flight
    }
  }
  // Clients learn that the coordinator is alive even while their tasks run long.
  for (auto& [id, s] : sessions_) {
    if (s->logged_in() && s->role() == Role::client) s->send(heartbeat_frame_);
  }
}

void Farm::expire_all(std::string_view why) {
  const std::lock_guard lock(mu_);
  std::vector<std::uint64_t> ids;
  for (const auto& [id, t] : tasks_) ids.push_back(id);
  const Json body = failure_body(Status::session_timeout, std::string(why));
  for (const std::uint64_t id : ids) relay(id, "session_timeout", body);
  queues_.clear();  // every task was answered, queued ones included
  flush_outbox();
}

std::vector<std::shared_ptr<Session>> Farm::all_sessions() const {
  const std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<Session>> out;
  for (const auto& [id, s] : sessions_) out.push_back(s);
  return out;
}

Json Farm::stats() const {
  const std::lock_guard lock(mu_);
  Json workers = Json::array();
  std::size_t slots = 0, busy = 0;
  for (const auto& [id, w] : workers_) {
    workers.push_back(Json{{"session", id},
                           {"name", w.name},
                           {"targets", w.targets},
                           {"backends", w.backends},
                           {"slots", w.slots},
                           {"in_flight", w.in_flight.size()}});
    slots += static_cast<std::size_t>(w.slots);
    busy += w.in_flight.size();
  }
  std::size_t queued = 0;
  for (const auto& [target, q] : queues_) queued += q.size();
  Json out = metrics_.to_json();
  out["workers"] = std::move(workers);
  out["slots_total"] = slots;
  out["slots_busy"] = busy;
  out["tasks_pending"] = tasks_.size();
  out["queue_depth"] = tasks_.size() - busy;
  out["queue_entries"] = queued;
  out["sessions"] = sessions_.size();
  out["draining"] = draining_;
  return out;
}

std::string Farm::metrics_text() const {
  std::size_t workers = 0, slots = 0, busy = 0, tasks = 0;
  {
    const std::lock_guard lock(mu_);
    workers = workers_.size();
    for (const auto& [id, w] : workers_) {
      slots += static_cast<std::size_t>(w.slots);
      busy += w.in_flight.size();
    }
    tasks = tasks_.size();
  }
  std::string text = metrics_.prometheus();
  text += "# HELP atvoss_farm_workers Workers connected and logged in.\n# TYPE atvoss_farm_workers gauge\n";
  text += "atvoss_farm_workers " + std::to_string(workers) + "\n";
  text += "# HELP atvoss_farm_slots Measurement slots of all workers.\n# TYPE atvoss_farm_slots gauge\n";
  text += "atvoss_farm_slots " + std::to_string(slots) + "\n";
  text += "# HELP atvoss_farm_slots_busy Slots holding a task.\n# TYPE atvoss_farm_slots_busy gauge\n";
  text += "atvoss_farm_slots_busy " + std::to_string(busy) + "\n";
  text += "# HELP atvoss_farm_queue_depth Tasks waiting for a slot.\n# TYPE atvoss_farm_queue_depth gauge\n";
  text += "atvoss_farm_queue_depth " + std::to_string(tasks - busy) + "\n";
  return text;
}

}  // namespace

// ---------------------------------------------------------------- Coordinator

struct Coordinator::Impl {
  explicit Impl(CoordinatorOptions o)
      : options(std::move(o)), farm(options, io), acceptor(io), sweep_timer(io), signals(io) {}

  asio::awaitable<void> accept_loop();
  void schedule_sweep();

  CoordinatorOptions options;
  asio::io_context io;
  Farm farm;
  tcp::acceptor acceptor;
  asio::steady_timer sweep_timer;
  asio::signal_set signals;
  std::unique_ptr<QueryServer> query;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::thread> threads;
  std::atomic<std::uint64_t> next_session{1};
  std::mutex stop_mu;
  std::condition_variable stopped_cv;
  bool shutting_down = false;
  bool stopped = false;
  std::thread signal_thread;
};

asio::awaitable<void> Coordinator::Impl::accept_loop() {
  asio::steady_timer backoff(acceptor.get_executor());
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      // E.g. EMFILE: the pending connection stays in the backlog, so retrying at once
      // would fail again at once and spin a core. Wait; the sessions we have keep going.
      farm.metrics().count_rejection("accept_failed");
      log_line("farm", "accept failed (" + ec.message() + "); retrying in " +
                           std::to_string(kAcceptBackoff.count()) + " ms");
      backoff.expires_after(kAcceptBackoff);
      co_await backoff.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    if (!farm.reserve_unauthenticated()) {
      refuse_busy(socket);
      farm.metrics().count_rejection(codes::busy);
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    auto session = std::make_shared<Session>(farm, std::move(socket), next_session++);
    farm.add_session(session);
    session->start();
  }
}

void Coordinator::Impl::schedule_sweep() {
  sweep_timer.expires_after(options.heartbeat_interval);
  sweep_timer.async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    farm.sweep();
    schedule_sweep();
  });
}

Coordinator::Coordinator(CoordinatorOptions options) : impl_(std::make_shared<Impl>(std::move(options))) {}

Coordinator::~Coordinator() {
  Impl& m = *impl_;
  if (m.signal_thread.joinable()) {
    boost::system::error_code ignored;
    m.signals.cancel(ignored);
  }
  {
    const std::lock_guard lock(m.stop_mu);
    m.shutting_down = true;
  }
  m.io.stop();
  for (std::thread& t : m.threads) {
    if (t.joinable()) t.join();
  }
  if (m.signal_thread.joinable()) m.signal_thread.join();
}

void Coordinator::start() {
  Impl& m = *impl_;
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(m.options.host, ec);
  if (ec) throw_bad_input("--host " + m.options.host + ": not an IP address");
  if (m.options.token) require_usable_token(*m.options.token, "farm token");
  // A bound below the login frame would refuse every peer; above 1 GiB one frame could
  // take the farm's memory.
  if (m.options.max_frame_bytes < m.options.max_login_frame_bytes || m.options.max_frame_bytes > (std::size_t{1} << 30)) {
    throw_bad_input("--max-frame-bytes must be " + std::to_string(m.options.max_login_frame_bytes) +
                    "..1073741824, got " + std::to_string(m.options.max_frame_bytes));
  }
  if (!m.options.token && !address.is_loopback()) {
    throw_bad_input("--host " + m.options.host +
                    ": binding a non-loopback address needs a token (--token-file or ATVOSS_TOKEN)");
  }
  const tcp::endpoint endpoint(address, m.options.port);
  m.acceptor.open(endpoint.protocol());
  m.acceptor.set_option(tcp::acceptor::reuse_address(true));
  m.acceptor.bind(endpoint, ec);
  if (ec) throw Error(ErrorKind::io, "cannot bind " + m.options.host + ":" + std::to_string(m.options.port) + ": " + ec.message());
  m.acceptor.listen(asio::socket_base::max_listen_connections);
  if (!m.options.db_path.empty()) m.farm.set_log(open_farm_log(m.options.db_path));
  if (m.options.http_port) {
    QueryHandlers handlers;
    handlers.stats = [&m] { return m.farm.stats(); };
    handlers.metrics = [&m] { return m.farm.metrics_text(); };
    if (!m.options.db_path.empty()) handlers.best = make_best_handler(m.options.db_path);
    m.query = std::make_unique<QueryServer>(m.io, m.options.http_host, *m.options.http_port,
                                            m.options.token, std::move(handlers));
  }
  asio::co_spawn(m.io, m.accept_loop(), [](std::exception_ptr e) { log_if_exception("farm", e); });
  m.schedule_sweep();
  m.work.emplace(m.io.get_executor());
  const int n = std::max(1, m.options.threads);
  for (int i = 0; i < n; ++i) m.threads.emplace_back([&m] { m.io.run(); });
}

std::uint16_t Coordinator::port() const { return impl_->acceptor.local_endpoint().port(); }
std::uint16_t Coordinator::http_port() const { return impl_->query ? impl_->query->port() : 0; }

void Coordinator::handle_signals() {
  Impl& m = *impl_;
  m.signals.add(SIGINT);
  m.signals.add(SIGTERM);
  m.signals.async_wait([this, &m](boost::system::error_code ec, int signal) {
    if (ec) return;
    log_line("farm", "signal " + std::to_string(signal) + ": graceful shutdown");
    // shutdown() blocks for the grace period, so it must not run on an io thread.
    m.signal_thread = std::thread([this] { shutdown(); });
  });
}

void Coordinator::shutdown() {
  Impl& m = *impl_;
  {
    const std::lock_guard lock(m.stop_mu);
    if (m.shutting_down) return;
    m.shutting_down = true;
  }
  m.farm.set_draining();
  asio::post(m.io, [&m] {
    boost::system::error_code ignored;
    m.acceptor.close(ignored);
    if (m.query) m.query->stop();
  });
  const auto deadline = Clock::now() + m.options.grace;
  while (!m.farm.drained() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  m.farm.expire_all("coordinator shut down before the task finished");
  for (const auto& s : m.farm.all_sessions()) {
    s->send_and_close(encode_frame(error_message(codes::shutting_down, "coordinator is shutting down")));
  }
  const auto flush_deadline = Clock::now() + std::chrono::seconds(3);
  while (m.farm.session_count() > 0 && Clock::now() < flush_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  asio::post(m.io, [&m] { m.sweep_timer.cancel(); });
  m.work.reset();
  m.io.stop();
  for (std::thread& t : m.threads) {
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
  }
  m.threads.clear();
  {
    const std::lock_guard lock(m.stop_mu);
    m.stopped = true;
  }
  m.stopped_cv.notify_all();
}

void Coordinator::wait() {
  Impl& m = *impl_;
  std::unique_lock lock(m.stop_mu);
  m.stopped_cv.wait(lock, [&m] { return m.stopped; });
}

Json Coordinator::stats() const { return impl_->farm.stats(); }
std::string Coordinator::metrics_text() const { return impl_->farm.metrics_text(); }

}  // namespace atvoss::rpc
