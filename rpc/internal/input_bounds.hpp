// Bounds on untrusted structured input, checked before nlohmann's decoders build a tree.
// nlohmann's MessagePack reader recurses once per nesting level, so a 400 KB frame
// nested 400k deep overflows the stack of whichever thread decodes it; and a DOM with
// millions of tiny elements costs ~16x its wire size. Every MessagePack payload or body
// and every JSON text that reaches rpc/ from a peer goes through one of these first.
// Threading: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/json.hpp"

namespace atvoss::rpc {

struct InputLimits {
  // Farm messages nest 4 deep, bodies (workload, schedule, profile) about 5; 64 leaves room.
  std::size_t max_depth = 64;
  // Values of all kinds in one document (a 16 MiB frame of 1-byte ints would be 16M).
  std::size_t max_elements = std::size_t{1} << 20;
};

// Walks bytes as one MessagePack value without recursion and checks that it is complete,
// has no trailing bytes, nests at most max_depth containers deep, holds at most
// max_elements values, and declares no string, bin or container longer than the bytes
// left. Throws Error(protocol) "<what>: ..." naming the breach.
void check_msgpack_bounds(std::span<const std::uint8_t> bytes, std::string_view what, const InputLimits& limits = {});

// Parses JSON text within the limits. Throws Error(bad_input) "<what>: ..." for invalid JSON
// (with the byte offset) or for a document nested too deep or with too many values.
Json parse_json_bounded(std::string_view text, std::string_view what, const InputLimits& limits = {});

}  // namespace atvoss::rpc
