#include "rpc/protocol.hpp"

#include <vector>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "rpc/internal/input_bounds.hpp"

namespace atvoss::rpc {

std::string farm_target_key(const Target& t) { return backend::target_traits(t).machine_bound ? t.name : t.key(); }

Json encode_body(const Json& object) {
  std::vector<std::uint8_t> bytes = Json::to_msgpack(object);
  return Json::binary(std::move(bytes));
}

Json decode_body(const Json& body, std::string_view what) {
  if (!body.is_binary()) throw Error(ErrorKind::protocol, std::string(what) + ": must be a MessagePack bin");
  const auto& bytes = body.get_binary();
  check_msgpack_bounds(std::span<const std::uint8_t>(bytes.data(), bytes.size()), what);
  Json decoded = Json::from_msgpack(bytes.begin(), bytes.end(), /*strict=*/true, /*allow_exceptions=*/false);
  if (decoded.is_discarded() || !decoded.is_object()) {
    throw Error(ErrorKind::protocol, std::string(what) + ": bin is not a MessagePack object");
  }
  return decoded;
}

std::string_view body_bytes(const Json& body) {
  const auto& bytes = body.get_binary();
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace atvoss::rpc
