// One-line stderr logging for the farm's long-running programs. Lines are written
// whole under a mutex so concurrent sessions do not interleave. Never pass a token here.
// Threading: safe from any thread.
#pragma once

#include <exception>
#include <string>
#include <string_view>

namespace atvoss::rpc {

// Writes "<program-time> <component>: <message>\n" to stderr unless logging is muted.
// Messages quote peers (a message type, a worker's name), so control bytes are escaped:
// a peer must not be able to forge log lines or send terminal escape sequences.
void log_line(std::string_view component, std::string_view message);
// text with bytes below 0x20 and 0x7f written as \xNN (backslash itself as \\).
std::string printable(std::string_view text);
// Completion handler body for co_spawn: logs an escaped exception instead of dropping it
// (asio::detached would; chriskohlhoff/asio#1111).
void log_if_exception(std::string_view component, std::exception_ptr e) noexcept;
// Tests and benchmarks mute the log; the tools leave it on.
void set_log_enabled(bool enabled) noexcept;

}  // namespace atvoss::rpc
