#include "rpc/auth.hpp"

#include <sys/stat.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <boost/asio/ip/address.hpp>

#include "core/error.hpp"
#include "core/user_paths.hpp"

namespace atvoss::rpc {

namespace {

std::string to_hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

std::string trim_trailing(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) {
    s.pop_back();
  }
  return s;
}

}  // namespace

std::string_view to_string(Role role) noexcept {
  switch (role) {
    case Role::worker:
      return "worker";
    case Role::client:
      return "client";
    case Role::query:
      return "query";
  }
  return "?";
}

Role parse_role(std::string_view s) {
  if (s == "worker") return Role::worker;
  if (s == "client") return Role::client;
  if (s == "query") return Role::query;
  throw Error(ErrorKind::protocol, "login: field 'role' must be worker, client or query");
}

void require_usable_token(std::string_view token, std::string_view source) {
  // An empty HMAC key or bearer token is a secret everybody knows: refuse it instead of
  // serving a public address "with a token" that admits anyone. HMAC pads its key with
  // NULs, so a key of NULs equals the empty key: control characters are refused outright,
  // and only printable ASCII other than the space counts towards the token's length
  // (Unicode spaces and other multibyte text count as blank).
  if (token.find_first_not_of(" \t\r\n\v\f") == std::string_view::npos) {
    throw_bad_input(std::string(source) + ": the token is empty or only whitespace");
  }
  std::size_t printable = 0;
  for (const char c : token) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f) {
      throw_bad_input(std::string(source) + ": the token holds a control character (byte " + std::to_string(b) +
                      "); a token is printable text");
    }
    printable += b > 0x20 && b < 0x7f ? 1 : 0;
  }
  if (printable < kMinTokenChars) {
    throw_bad_input(std::string(source) + ": the token has " + std::to_string(printable) +
                    " printable characters; it needs at least " + std::to_string(kMinTokenChars) +
                    " (for example: openssl rand -hex 16)");
  }
}

namespace {

// A token file others can read gives the farm's key away, and one they can write lets them
// replace it: refused, as ssh refuses a private key with such a mode, naming who has access.
void require_private_token_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(ErrorKind::io, "--token-file " + path + ": cannot read");
  const bool group = (st.st_mode & (S_IRGRP | S_IWGRP)) != 0, others = (st.st_mode & (S_IROTH | S_IWOTH)) != 0;
  if (!group && !others) return;
  std::ostringstream mode;
  mode << std::oct << (st.st_mode & 07777);
  const std::string who = group && others ? "group and others" : group ? "group" : "others";
  throw_bad_input("--token-file " + path + ": the token file is open to " + who + " (mode " + mode.str() +
                  "); a token file must be readable by its owner only, as ssh requires of keys (chmod 600 " + path +
                  ")");
}

}  // namespace

std::optional<std::string> load_token(const std::string& token_file) {
  if (!token_file.empty()) {
    require_input_file(token_file, "--token-file");
    require_private_token_file(token_file);
    std::ifstream in(token_file, std::ios::binary);
    if (!in) throw Error(ErrorKind::io, "--token-file " + token_file + ": cannot read");
    std::ostringstream text;
    text << in.rdbuf();
    std::string token = trim_trailing(text.str());
    // Never echo the token; name only the file.
    require_usable_token(token, "--token-file " + token_file);
    return token;
  }
  // Set but empty is refused too: whoever set it meant a token, and silently running
  // without one would change who may connect.
  if (const char* env = std::getenv("ATVOSS_TOKEN"); env != nullptr) {
    std::string token = trim_trailing(env);
    require_usable_token(token, "ATVOSS_TOKEN");
    return token;
  }
  return std::nullopt;
}

std::string make_nonce() {
  std::array<unsigned char, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw Error(ErrorKind::internal, "auth: RAND_bytes failed");
  }
  return to_hex(bytes.data(), bytes.size());
}

std::string hmac_hex(std::string_view token, std::string_view nonce) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int length = 0;
  const unsigned char* ok =
      HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
           reinterpret_cast<const unsigned char*>(nonce.data()), nonce.size(), mac.data(), &length);
  if (ok == nullptr) throw Error(ErrorKind::internal, "auth: HMAC-SHA256 failed");
  return to_hex(mac.data(), length);
}

bool verify_mac(std::string_view token, std::string_view nonce, std::string_view mac) {
  const std::string expected = hmac_hex(token, nonce);
  if (mac.size() != expected.size()) return false;  // the length of a hex SHA-256 is public
  return CRYPTO_memcmp(expected.data(), mac.data(), expected.size()) == 0;
}

bool tokens_equal(std::string_view expected, std::string_view presented) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> a{}, b{};
  SHA256(reinterpret_cast<const unsigned char*>(expected.data()), expected.size(), a.data());
  SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), b.data());
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool is_loopback_address(std::string_view address) {
  boost::system::error_code ec;
  const auto parsed = boost::asio::ip::make_address(std::string(address), ec);
  if (ec) return false;
  if (parsed.is_v6()) {
    const auto v6 = parsed.to_v6();
    if (v6.is_v4_mapped()) {
      return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6).is_loopback();
    }
  }
  return parsed.is_loopback();
}

}  // namespace atvoss::rpc
