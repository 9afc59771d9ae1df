// Frame codec of the farm protocol: a 4-byte big-endian payload length, then a
// MessagePack payload (nlohmann::json::to_msgpack) holding one JSON object with
// a string "type". The length is checked against max_frame_bytes before any
// buffer for the payload is allocated, so a hostile length costs nothing.
// Coroutine-free and socket-free on purpose: the fuzzer and the tests drive it
// from memory. Threading: a FrameDecoder belongs to one connection (one thread at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace atvoss::rpc {

inline constexpr std::size_t kHeaderBytes = 4;
inline constexpr std::size_t kDefaultMaxFrameBytes = 16u << 20;  // 16 MiB
// Until login: a login message is under 200 bytes, so 4 KiB leaves room and costs little.
inline constexpr std::size_t kDefaultLoginFrameBytes = 4096;

// Encodes one message as header + MessagePack. REQUIRES: message is an object with a string
// "type" (internal error otherwise: encoding a bad message is a bug, not bad input).
std::string encode_frame(const Json& message);

// Appends the encoding of message to out (avoids a copy when batching writes).
void append_frame(std::string& out, const Json& message);

// Reads the big-endian length of a header. REQUIRES: header.size() >= 4.
std::uint32_t read_length(std::span<const std::uint8_t> header) noexcept;

// Decodes one payload; throws Error(protocol) naming what is wrong (not MessagePack,
// not an object, no string "type").
Json decode_payload(std::span<const std::uint8_t> payload);

// Incremental decoder: feed() bytes as they arrive, next() yields whole messages.
// After an Error from next() the stream is unusable: the caller closes that connection.
class FrameDecoder {
 public:
  explicit FrameDecoder(std::size_t max_frame_bytes = kDefaultMaxFrameBytes) : max_frame_bytes_(max_frame_bytes) {}

  void feed(std::span<const std::uint8_t> bytes);
  void feed(const char* data, std::size_t size) { feed(std::span(reinterpret_cast<const std::uint8_t*>(data), size)); }
  // The next complete message, or nullopt if more bytes are needed.
  // Throws Error(protocol) for an oversized length or an undecodable payload.
  std::optional<Json> next();
  // Changes the bound for frames not yet read: servers raise it after login, so that a
  // peer that has not proved the token can make them buffer only a small frame.
  void set_max_frame_bytes(std::size_t max_frame_bytes) noexcept { max_frame_bytes_ = max_frame_bytes; }
  // Bytes received but not yet consumed (a partial frame at end of stream is truncation).
  std::size_t buffered() const noexcept { return buffer_.size() - consumed_; }

 private:
  std::size_t max_frame_bytes_;
  std::vector<std::uint8_t> buffer_;
  std::size_t consumed_ = 0;
};

}  // namespace atvoss::rpc
