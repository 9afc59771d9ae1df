// Session and Farm (rpc/internal/farm_session.hpp): one connection's handshake, reads and
// ordered writes, and the farm's metrics page.
#include "rpc/internal/farm_session.hpp"

#include <algorithm>
#include <array>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/error.hpp"
#include "rpc/auth.hpp"
#include "rpc/log.hpp"

namespace atvoss::rpc::farm {
namespace {

// Unsent bytes one connection may queue before it counts as a stuck peer.
constexpr std::size_t kMaxPendingBytes = 256u << 20;

// The `busy` message of a connection evicted from the places waiting to log in.
constexpr const char* kEvicted = "too many connections waiting to log in; this one was the oldest";

}  // namespace

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

}  // namespace atvoss::rpc::farm
