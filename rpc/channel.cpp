#include "rpc/channel.hpp"

#include <poll.h>

#include <charconv>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>

#include "core/error.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::rpc {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

Endpoint parse_endpoint(const std::string& text, std::string_view flag) {
  const std::size_t colon = text.rfind(':');
  Endpoint e;
  unsigned port = 0;
  if (colon == std::string::npos || colon == 0) {
    throw_bad_input(std::string(flag) + " " + text + ": expected host:port");
  }
  const char* first = text.data() + colon + 1;
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(first, last, port);
  if (ec != std::errc() || end != last || port == 0 || port > 65535) {
    throw_bad_input(std::string(flag) + " " + text + ": port must be 1..65535");
  }
  e.host = text.substr(0, colon);
  if (e.host.size() > 2 && e.host.front() == '[' && e.host.back() == ']') e.host = e.host.substr(1, e.host.size() - 2);
  e.port = static_cast<std::uint16_t>(port);
  return e;
}

bool is_permanent_refusal(const Error& e) {
  if (e.kind() == ErrorKind::bad_input) return true;  // our own configuration, e.g. an empty token
  constexpr std::string_view kPrefix = "farm refused: ";
  const std::string_view what = e.what();
  if (e.kind() != ErrorKind::protocol || what.substr(0, kPrefix.size()) != kPrefix) return false;
  const std::string_view code = what.substr(kPrefix.size(), what.find(':', kPrefix.size()) - kPrefix.size());
  return code != codes::shutting_down && code != codes::login_timeout && code != codes::busy;
}

Channel::Channel(std::size_t max_frame_bytes) : socket_(io_), decoder_(max_frame_bytes) {}

Channel::~Channel() { close(); }

std::unique_ptr<Channel> Channel::open(const Endpoint& farm, const ChannelOptions& options) {
  if (options.token) require_usable_token(*options.token, "farm token");
  std::unique_ptr<Channel> c(new Channel(options.max_frame_bytes));
  boost::system::error_code ec;
  tcp::resolver resolver(c->io_);
  const auto endpoints = resolver.resolve(farm.host, std::to_string(farm.port), ec);
  if (ec) throw Error(ErrorKind::io, "farm " + farm.to_string() + ": cannot resolve: " + ec.message());
  asio::connect(c->socket_, endpoints, ec);
  if (ec) throw Error(ErrorKind::io, "farm " + farm.to_string() + ": cannot connect: " + ec.message());
  c->socket_.set_option(tcp::no_delay(true), ec);

  const std::optional<Json> hello = c->receive(options.login_timeout);
  if (!hello || hello->at("type") != "hello" || !hello->contains("nonce") || !(*hello)["nonce"].is_string()) {
    throw Error(ErrorKind::protocol, "farm " + farm.to_string() + ": no hello from the server");
  }
  Json login{{"type", "login"},
             {"version", options.version == 0 ? kProtocolVersion : options.version},
             {"role", to_string(options.role)}};
  if (options.token) login["mac"] = hmac_hex(*options.token, (*hello)["nonce"].get<std::string>());
  c->send(login);
  const std::optional<Json> welcome = c->receive(options.login_timeout);
  if (!welcome || welcome->at("type") != "welcome") {
    throw Error(ErrorKind::protocol, "farm " + farm.to_string() + ": no welcome after login");
  }
  c->welcome_ = *welcome;
  return c;
}

void Channel::send(const Json& message) { send_raw(encode_frame(message)); }

void Channel::send_raw(std::string_view bytes) {
  const std::lock_guard lock(write_mu_);
  boost::system::error_code ec;
  asio::write(socket_, asio::buffer(bytes.data(), bytes.size()), ec);
  if (ec) throw Error(ErrorKind::io, "farm connection lost while sending: " + ec.message());
}

std::optional<Json> Channel::receive(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (std::optional<Json> message = decoder_.next()) {
      if (message->at("type") == "error") {
        throw Error(ErrorKind::protocol, "farm refused: " + message->value("code", std::string("error")) + ": " +
                                             message->value("message", std::string()));
      }
      return message;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    if (!socket_.is_open()) throw Error(ErrorKind::io, "farm connection closed");
    pollfd pfd{socket_.native_handle(), POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) throw Error(ErrorKind::io, "farm connection: poll failed");
    if (ready <= 0) continue;
    boost::system::error_code ec;
    const std::size_t n = socket_.read_some(asio::buffer(buffer_), ec);
    if (ec) throw Error(ErrorKind::io, "farm connection closed: " + ec.message());
    decoder_.feed(buffer_.data(), n);
  }
}

void Channel::close() {
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
}

}  // namespace atvoss::rpc
