// Channel: the peer side of one farm connection — connect, answer the login challenge,
// then send and receive whole messages with blocking calls and timeouts. Workers and
// clients are built on it; it uses plain blocking sockets (no coroutines) so that the
// peers stay simple threads and any compiler can build them.
// Threading: send() is thread-safe; receive() must be called by one thread at a time;
// close() is thread-safe and wakes a blocked receive().
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "core/error.hpp"
#include "core/json.hpp"
#include "rpc/auth.hpp"
#include "rpc/frame.hpp"

namespace atvoss::rpc {

struct Endpoint {
  std::string host = "127.0.0.1";
  std::uint16_t port = 9190;
  std::string to_string() const { return host + ":" + std::to_string(port); }
};

// "host:port" -> Endpoint; bad_input naming the flag if malformed.
Endpoint parse_endpoint(const std::string& text, std::string_view flag = "--farm");

// True for an Error from Channel that reconnecting cannot fix: the farm refused the login
// (auth_failed, version_mismatch, loopback_only, protocol), or our own options are unusable
// (bad_input, e.g. an empty token). Not for shutting_down, busy or
// login_timeout, which a retry against a live coordinator can get past.
bool is_permanent_refusal(const Error& e);

struct ChannelOptions {
  Role role = Role::client;
  std::optional<std::string> token;
  int version = 0;  // 0: kProtocolVersion (tests set others to check rejection)
  std::chrono::milliseconds login_timeout{5000};
  std::size_t max_frame_bytes = kDefaultMaxFrameBytes;
};

class Channel {
 public:
  // Connects and logs in. Error(io) if the farm cannot be reached or hangs up;
  // Error(protocol) with the server's code and message if it refuses the login.
  static std::unique_ptr<Channel> open(const Endpoint& farm, const ChannelOptions& options);
  ~Channel();

  // The server's welcome message ({"session", "heartbeat_ms", ...}).
  const Json& welcome() const { return welcome_; }

  // Sends one message. Error(io) if the connection is gone.
  void send(const Json& message);
  // Sends pre-encoded frames (batching, and tests that send malformed bytes on purpose).
  void send_raw(std::string_view bytes);
  // Next message, or nullopt after timeout. Error(io) when the connection closes;
  // Error(protocol) for a bad frame or an {"type":"error"} from the server (its message).
  std::optional<Json> receive(std::chrono::milliseconds timeout);
  // Shuts the socket down; a blocked receive() returns Error(io).
  void close();

 private:
  Channel(std::size_t max_frame_bytes);
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  FrameDecoder decoder_;
  std::mutex write_mu_;
  Json welcome_;
  std::vector<char> buffer_ = std::vector<char>(64 * 1024);
};

}  // namespace atvoss::rpc
