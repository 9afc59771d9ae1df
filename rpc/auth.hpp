// Farm authentication: a shared token, a server nonce, and the peer's answer
// HMAC-SHA256(token, nonce) compared in constant time (OpenSSL). With no token
// configured a server accepts loopback peers only. Tokens are read from a file
// (--token-file) or the ATVOSS_TOKEN environment variable, never from argv, and
// never appear in messages or logs. Coroutine-free so it can be fuzzed and unit-tested.
// Threading: free functions, safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace atvoss::rpc {

// Roles a peer logs in as: worker (measures), client (submits), query (reads stats).
enum class Role { worker, client, query };
std::string_view to_string(Role role) noexcept;
Role parse_role(std::string_view s);  // Error(protocol) naming the field on unknown roles

// The token from token_file if non-empty (io error if unreadable; bad_input, naming the file
// and who has access, if group or others may read or write it), else from ATVOSS_TOKEN if
// set, else nullopt (loopback-only mode). Trailing whitespace is trimmed; a token that is
// then empty (an empty file, ATVOSS_TOKEN="" or "  ") is bad_input naming its source.
std::optional<std::string> load_token(const std::string& token_file);

// Printable ASCII characters (not the space) a token needs at least: 16, the length of
// `openssl rand -hex 8`, so that a guessable short word is not a farm's only lock.
inline constexpr std::size_t kMinTokenChars = 16;

// bad_input naming source (never the token) for a token that is empty or only whitespace,
// holds a control character (a NUL-only token equals the empty HMAC key), or has fewer
// than kMinTokenChars printable characters. Every consumer of a token (coordinator, query
// server, channel) calls it, not only load_token.
void require_usable_token(std::string_view token, std::string_view source);

// 32 random bytes from OpenSSL's RAND_bytes, hex-encoded (64 chars). internal error if RAND fails.
std::string make_nonce();

// HMAC-SHA256(key = token, data = nonce) as 64 lowercase hex digits.
std::string hmac_hex(std::string_view token, std::string_view nonce);

// True iff mac equals hmac_hex(token, nonce). Constant time in the contents (CRYPTO_memcmp);
// a mac of the wrong length is rejected without comparing.
bool verify_mac(std::string_view token, std::string_view nonce, std::string_view mac);

// Constant-time equality for bearer tokens: compares SHA-256 digests so that neither
// the contents nor the length of the expected token leak through timing.
bool tokens_equal(std::string_view expected, std::string_view presented);

// True for 127.0.0.0/8, ::1 and IPv4-mapped loopback; false for anything else or unparsable text.
bool is_loopback_address(std::string_view address);

}  // namespace atvoss::rpc
