// Coordinator implementation: lifetime (start, sweep timer, graceful shutdown, signals) around
// the Farm and its Sessions (rpc/internal/farm_session.hpp, farm_session.cpp).
#include "rpc/coordinator.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/error.hpp"
#include "rpc/auth.hpp"
#include "rpc/farm_log.hpp"
#include "rpc/farm_state.hpp"
#include "rpc/internal/farm_session.hpp"
#include "rpc/log.hpp"
#include "rpc/metrics.hpp"
#include "rpc/query_server.hpp"

namespace atvoss::rpc {

namespace {

// Pause of the accept loop after a failed accept (file-descriptor limit and the like).
constexpr std::chrono::milliseconds kAcceptBackoff{100};

}  // namespace

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- Coordinator

struct Coordinator::Impl {
  explicit Impl(CoordinatorOptions o)
      : options(std::move(o)), farm(options, io), acceptor(io), sweep_timer(io), signals(io) {}

  asio::awaitable<void> accept_loop();
  void schedule_sweep();

  CoordinatorOptions options;
  asio::io_context io;
  farm::Farm farm;
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
    auto session = std::make_shared<farm::Session>(farm, std::move(socket), next_session++);
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
