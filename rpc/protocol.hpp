// Farm protocol constants and the small message builders shared by the coordinator,
// workers and clients. docs/protocol.md is the reference for every message and field.
// Threading: constants and pure functions only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/json.hpp"
#include "core/target.hpp"

namespace atvoss::rpc {

// Bumped on any incompatible change to a message; peers must match exactly.
inline constexpr int kProtocolVersion = 1;
inline constexpr std::uint16_t kDefaultFarmPort = 9190;
inline constexpr std::uint16_t kDefaultHttpPort = 9191;

// Error codes carried by {"type":"error","code":...} before the server closes a connection.
namespace codes {
inline constexpr std::string_view auth_failed = "auth_failed";
inline constexpr std::string_view loopback_only = "loopback_only";
inline constexpr std::string_view version_mismatch = "version_mismatch";
inline constexpr std::string_view protocol = "protocol";
inline constexpr std::string_view login_timeout = "login_timeout";
inline constexpr std::string_view shutting_down = "shutting_down";
inline constexpr std::string_view busy = "busy";  // too many connections not yet logged in
}  // namespace codes

inline Json error_message(std::string_view code, std::string_view message) {
  return Json{{"type", "error"}, {"code", code}, {"message", message}};
}

// The key the farm routes a target's tasks by: workers register it, clients submit under it,
// and the coordinator hands a task only to workers that registered the same key.
//   - a simulated or recorded target: Target::key(), so a task reaches only workers that
//     simulate exactly that description;
//   - a host target (organisation "cpu", host/machine.hpp): its name "host-<12 hex>", the
//     CPU's fingerprint. Two machines of one CPU model share it, though each measures its own
//     peak and bandwidth into its description; a worker of another CPU never matches.
std::string farm_target_key(const Target& t);

// Request and measurement bodies travel as MessagePack "bin" values inside a message:
// the coordinator routes, de-duplicates and relays them as opaque bytes and never
// rebuilds their JSON trees, which is most of its per-item cost otherwise.
//   request body:     msgpack of {"workload": {...}, "schedule": {...}, "repeat": n, "seed": s,
//                     "fusion_rules": [declarations] (only when the client has rules beyond
//                     the built-ins; the worker lowers the item under them)}
//   measurement body: msgpack of Measurement::to_json()
// Both are encoded from sorted-key objects, so equal requests have equal bytes.
Json encode_body(const Json& object);
// Error(protocol) naming what if body is not a bin holding a MessagePack object.
Json decode_body(const Json& body, std::string_view what);
// The bytes of a bin value. REQUIRES: body.is_binary().
std::string_view body_bytes(const Json& body);

}  // namespace atvoss::rpc
