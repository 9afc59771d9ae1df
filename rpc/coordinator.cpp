// Coordinator implementation. Read in this order:
//   Session      one TCP connection: hello/login handshake, frame reading, ordered writes
//   Farm         the shell around FarmState (rpc/farm_state.hpp, every rule of the farm):
//                feeds it events from the sessions and the sweep timer and carries out
//                the actions it returns (sends, closes, farm-log writes)
//   Coordinator  lifetime: start, sweep timer, graceful shutdown, signals
// Locking: Farm::mu_ guards the FarmState and the session table. Actions are carried out
// under mu_, so the messages of one event reach a session in the order the state made
// them; Session::send() only posts to the session's strand, so nothing blocks under mu_.
#include "rpc/coordinator.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/error.hpp"
#include "core/measurement.hpp"
#include "rpc/auth.hpp"
#include "rpc/farm_log.hpp"
#include "rpc/farm_state.hpp"
#include "rpc/internal/admission_gate.hpp"
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

// The `busy` message of a connection evicted from the places waiting to log in.
constexpr const char* kEvicted = "too many connections waiting to log in; this one was the oldest";

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
  asio::post(strand_, [self = shared_from_this(), b = std::move(bytes)]() mutable { self->end_with(std::move(b)); });
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

void Session::evict() {
  asio::post(strand_, [self = shared_from_this()] {
    if (!self->logged_in_ && !self->ending_) {
      self->fail(codes::busy, kEvicted);
    }
  });
}

void Session::write_some() {
  writing_.clear();
  writing_.swap(pending_);
  write_active_ = true;
  asio::async_write(
      socket_, asio::buffer(writing_),
      asio::bind_executor(strand_, [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
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
    const std::size_t n =
        co_await socket_.async_read_some(asio::buffer(read_buffer_), asio::redirect_error(asio::use_awaitable, ec));
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
    fail(codes::protocol, "the first message must be a login, got '" + message.at("type").get<std::string>() + "'");
    return;
  }
  const auto version = message.find("version");
  if (version == message.end() || !version->is_number_integer() || *version != kProtocolVersion) {
    fail(codes::version_mismatch, "this farm speaks protocol version " + std::to_string(kProtocolVersion) +
                                      ", peer sent " + (version == message.end() ? "none" : version->dump()));
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
    if (mac == message.end() || !mac->is_string() || !verify_mac(*token, nonce_, mac->get<std::string>())) {
      fail(codes::auth_failed, "login: wrong or missing farm token");
      return;
    }
  }
  if (!farm_.pass_login(*this)) {
    fail(codes::busy, kEvicted);
    return;
  }
  logged_in_ = true;
  login_timer_.cancel();
  send(encode_frame(Json{{"type", "welcome"},
                         {"version", kProtocolVersion},
                         {"session", id_},
                         {"heartbeat_ms", farm_.options().heartbeat_interval.count()}}));
  farm_.on_login(shared_from_this());
}

std::string Farm::metrics_text() const {
  FarmLoad load;
  {
    const std::lock_guard lock(mu_);
    load = state_.load();
  }
  const std::size_t workers = load.workers, slots = load.slots, busy = load.busy, tasks = load.tasks;
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
      log_line("farm",
               "accept failed (" + ec.message() + "); retrying in " + std::to_string(kAcceptBackoff.count()) + " ms");
      backoff.expires_after(kAcceptBackoff);
      co_await backoff.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    const auto remote = socket.remote_endpoint(ec);
    if (ec) continue;
    socket.set_option(tcp::no_delay(true), ec);
    auto session = std::make_shared<Session>(farm, std::move(socket), next_session++);
    farm.add_session(session, remote.address().to_string());
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
  if (m.options.max_frame_bytes < m.options.max_login_frame_bytes ||
      m.options.max_frame_bytes > (std::size_t{1} << 30)) {
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
  if (ec)
    throw Error(ErrorKind::io,
                "cannot bind " + m.options.host + ":" + std::to_string(m.options.port) + ": " + ec.message());
  m.acceptor.listen(asio::socket_base::max_listen_connections);
  if (!m.options.db_path.empty()) m.farm.set_log(open_farm_log(m.options.db_path));
  if (m.options.http_port) {
    QueryHandlers handlers;
    handlers.stats = [&m] { return m.farm.stats(); };
    handlers.metrics = [&m] { return m.farm.metrics_text(); };
    if (!m.options.db_path.empty()) handlers.best = make_best_handler(m.options.db_path);
    m.query = std::make_unique<QueryServer>(m.io, m.options.http_host, *m.options.http_port, m.options.token,
                                            std::move(handlers));
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
  m.farm.wait_drained(Clock::now() + m.options.grace);
  m.farm.expire_all("coordinator shut down before the task finished");
  for (const auto& s : m.farm.all_sessions()) {
    s->send_and_close(encode_frame(error_message(codes::shutting_down, "coordinator is shutting down")));
  }
  m.farm.wait_sessions_closed(Clock::now() + std::chrono::seconds(3));
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
