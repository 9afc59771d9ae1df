#include "rpc/frame.hpp"

#include "core/error.hpp"
#include "rpc/internal/input_bounds.hpp"

namespace atvoss::rpc {

namespace {

void check_message(const Json& message, ErrorKind kind) {
  if (!message.is_object()) throw Error(kind, "frame: message is not an object");
  const auto it = message.find("type");
  if (it == message.end() || !it->is_string()) {
    throw Error(kind, "frame: message has no string field 'type'");
  }
}

}  // namespace

void append_frame(std::string& out, const Json& message) {
  check_message(message, ErrorKind::internal);
  const std::size_t start = out.size();
  out.append(kHeaderBytes, '\0');
  Json::to_msgpack(message, out);  // appends: the string converts to nlohmann's output adapter
  const std::size_t length = out.size() - start - kHeaderBytes;
  if (length > 0xffffffffu) throw Error(ErrorKind::internal, "frame: message over 4 GiB");
  for (int i = 0; i < 4; ++i) {
    out[start + i] = static_cast<char>((length >> (24 - 8 * i)) & 0xff);
  }
}

std::string encode_frame(const Json& message) {
  std::string out;
  append_frame(out, message);
  return out;
}

std::uint32_t read_length(std::span<const std::uint8_t> header) noexcept {
  return (std::uint32_t{header[0]} << 24) | (std::uint32_t{header[1]} << 16) | (std::uint32_t{header[2]} << 8) |
         std::uint32_t{header[3]};
}

Json decode_payload(std::span<const std::uint8_t> payload) {
  // nlohmann's reader recurses per nesting level: bound depth and counts before it runs.
  check_msgpack_bounds(payload, "frame");
  // allow_exceptions=false: a malformed payload becomes a discarded value, not a throw
  // from deep inside the parser with a message we do not control.
  Json message = Json::from_msgpack(payload.begin(), payload.end(), /*strict=*/true,
                                    /*allow_exceptions=*/false);
  if (message.is_discarded()) {
    throw Error(ErrorKind::protocol,
                "frame: payload of " + std::to_string(payload.size()) + " bytes is not valid MessagePack");
  }
  check_message(message, ErrorKind::protocol);
  return message;
}

void FrameDecoder::feed(std::span<const std::uint8_t> bytes) {
  if (consumed_ > 0 && consumed_ == buffer_.size()) {
    buffer_.clear();
    consumed_ = 0;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

std::optional<Json> FrameDecoder::next() {
  const std::size_t available = buffer_.size() - consumed_;
  if (available < kHeaderBytes) return std::nullopt;
  const std::span<const std::uint8_t> rest(buffer_.data() + consumed_, available);
  const std::uint32_t length = read_length(rest);
  if (length > max_frame_bytes_) {
    throw Error(ErrorKind::protocol, "frame: length " + std::to_string(length) + " exceeds the maximum of " +
                                         std::to_string(max_frame_bytes_) + " bytes");
  }
  if (available - kHeaderBytes < length) return std::nullopt;
  Json message = decode_payload(rest.subspan(kHeaderBytes, length));
  consumed_ += kHeaderBytes + length;
  // Compact once the consumed prefix dominates, so a long-lived stream stays small.
  if (consumed_ > 65536 && consumed_ * 2 > buffer_.size()) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(consumed_));
    consumed_ = 0;
  }
  return message;
}

}  // namespace atvoss::rpc
