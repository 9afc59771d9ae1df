// Login primitives: HMAC against RFC 4231, constant-time checks, token sources, loopback.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

#include "core/error.hpp"
#include "rpc/auth.hpp"
#include "rpc/channel.hpp"
#include "rpc/coordinator.hpp"
#include "rpc/query_server.hpp"

namespace atvoss::rpc {
namespace {

TEST(Auth, HmacMatchesRfc4231TestCase2) {
  EXPECT_EQ(hmac_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Auth, VerifyAcceptsOnlyTheRightTokenAndNonce) {
  const std::string nonce = make_nonce();
  const std::string mac = hmac_hex("secret", nonce);
  EXPECT_TRUE(verify_mac("secret", nonce, mac));
  EXPECT_FALSE(verify_mac("Secret", nonce, mac));
  EXPECT_FALSE(verify_mac("secret", make_nonce(), mac));  // a replay against a new nonce
  EXPECT_FALSE(verify_mac("secret", nonce, mac.substr(1)));
  EXPECT_FALSE(verify_mac("secret", nonce, ""));
}

TEST(Auth, NoncesAreFreshAndHex) {
  const std::string a = make_nonce(), b = make_nonce();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(Auth, BearerTokensCompareExactly) {
  EXPECT_TRUE(tokens_equal("abc", "abc"));
  EXPECT_FALSE(tokens_equal("abc", "abd"));
  EXPECT_FALSE(tokens_equal("abc", "abcd"));
  EXPECT_FALSE(tokens_equal("abc", ""));
}

TEST(Auth, RolesParseAndUnknownRolesAreProtocolErrors) {
  EXPECT_EQ(parse_role("worker"), Role::worker);
  EXPECT_EQ(parse_role("client"), Role::client);
  EXPECT_EQ(parse_role("query"), Role::query);
  try {
    parse_role("admin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::protocol);
  }
}

TEST(Auth, TokenComesFromFileThenEnvironment) {
  const auto dir = std::filesystem::temp_directory_path() / ("atvoss_auth_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "token").string();
  std::ofstream(file) << "from-file-0123456789\n";
  ::chmod(file.c_str(), 0600);  // load_token refuses a token file others may read
  ::setenv("ATVOSS_TOKEN", "from-env-0123456789", 1);
  EXPECT_EQ(load_token(file).value(), "from-file-0123456789");  // trailing newline trimmed
  EXPECT_EQ(load_token("").value(), "from-env-0123456789");
  ::unsetenv("ATVOSS_TOKEN");
  EXPECT_FALSE(load_token("").has_value());
  std::ofstream(file) << "\n";
  try {
    load_token(file);
    FAIL() << "an empty token file was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_EQ(std::string(e.what()).find("from-file"), std::string::npos);
  }
  EXPECT_THROW(load_token((dir / "missing").string()), Error);
  std::filesystem::remove_all(dir);
}

// A token file group or others may read (or write) was accepted: refused as ssh refuses a
// key, naming who has access, never the token.
TEST(Auth, ATokenFileOthersMayOpenIsRefusedSayingWho) {
  const auto dir = std::filesystem::temp_directory_path() / ("atvoss_auth_mode_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "token").string();
  std::ofstream(file) << "from-file-0123456789\n";
  for (const auto& [mode, who] : {std::pair{0644, "group and others (mode 644)"}, std::pair{0640, "group (mode 640)"},
                                  std::pair{0602, "others (mode 602)"}}) {
    ::chmod(file.c_str(), static_cast<mode_t>(mode));
    try {
      load_token(file);
      ADD_FAILURE() << "accepted mode " << who;
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_THAT(e.what(), testing::HasSubstr("--token-file " + file + ": the token file is open to " + who));
      EXPECT_EQ(std::string(e.what()).find("from-file"), std::string::npos);
    }
  }
  for (const mode_t mode : {0600, 0400}) {
    ::chmod(file.c_str(), mode);
    EXPECT_EQ(load_token(file).value(), "from-file-0123456789");
  }
  std::filesystem::remove_all(dir);
}

// An empty HMAC key or bearer token is public: a whitespace-only token was trimmed to ""
// and accepted, and the farm then bound a public address admitting anyone.
TEST(Auth, EmptyOrWhitespaceTokensAreRefusedFromEverySource) {
  const auto dir = std::filesystem::temp_directory_path() / ("atvoss_auth_ws_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "token").string();
  const auto refused = [](auto&& f, const std::string& source) {
    try {
      f();
      ADD_FAILURE() << source << ": accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input()) << e.what();
      EXPECT_THAT(e.what(), testing::HasSubstr(source + ": the token is empty or only whitespace"));
    }
  };
  for (const char* blank : {"", " ", " \t \r\n", "\n\n"}) {
    SCOPED_TRACE(testing::PrintToString(std::string(blank)));
    ::setenv("ATVOSS_TOKEN", blank, 1);
    refused([] { load_token(""); }, "ATVOSS_TOKEN");
    ::unsetenv("ATVOSS_TOKEN");
    std::ofstream(file) << blank;
    ::chmod(file.c_str(), 0600);
    refused([&] { load_token(file); }, "--token-file " + file);
    // Options built in code get the same check where the token is used.
    CoordinatorOptions o;
    o.port = 0;
    o.token = blank;
    refused([&] { Coordinator(o).start(); }, "farm token");
    boost::asio::io_context io;
    refused([&] { QueryServer(io, "127.0.0.1", 0, std::string(blank), QueryHandlers{}); }, "query server token");
    ChannelOptions co;
    co.token = blank;
    // Refused before connecting (nothing listens on port 1), and never retried.
    try {
      Channel::open(Endpoint{"127.0.0.1", 1}, co);
      ADD_FAILURE() << "channel accepted a blank token";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input()) << e.what();
      EXPECT_TRUE(is_permanent_refusal(e));
    }
  }
  ::setenv("ATVOSS_TOKEN", " padded-0123456789 \n", 1);  // a real token keeps working, trailing space trimmed
  EXPECT_EQ(load_token("").value(), " padded-0123456789");
  ::unsetenv("ATVOSS_TOKEN");
  std::filesystem::remove_all(dir);
}

// A token file of NUL bytes was taken as a token, and an HMAC keyed with NULs equals one
// keyed with nothing: HMAC(b"", nonce) logged in to a farm bound to 0.0.0.0.
TEST(Auth, ControlCharactersAndShortTokensAreRefused) {
  const auto dir = std::filesystem::temp_directory_path() / ("atvoss_auth_nul_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "token").string();
  {
    std::ofstream out(file, std::ios::binary);
    out << std::string(32, '\0');
  }
  ::chmod(file.c_str(), 0600);
  try {
    load_token(file);
    ADD_FAILURE() << "a NUL-only token was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_THAT(e.what(), testing::HasSubstr("control character (byte 0)"));
  }
  EXPECT_NE(hmac_hex(std::string(32, '\0'), "nonce"), hmac_hex("x", "nonce"));  // sanity: hmac itself works
  EXPECT_EQ(hmac_hex(std::string(32, '\0'), "nonce"), hmac_hex("", "nonce"));   // why NULs are refused
  const auto refused = [](const std::string& token, const std::string& why) {
    try {
      require_usable_token(token, "test");
      ADD_FAILURE() << "accepted " << testing::PrintToString(token);
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_THAT(e.what(), testing::HasSubstr(why));
      EXPECT_EQ(std::string(e.what()).find(token), std::string::npos) << "the message echoes the token";
    }
  };
  refused("abcdefghijklmnop\x01", "control character (byte 1)");
  refused("tab\tinside-the-token", "control character (byte 9)");
  refused("short-token", "has 11 printable characters; it needs at least 16");
  refused("\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0", "has 0 printable characters");  // no-break spaces
  EXPECT_NO_THROW(require_usable_token("0123456789abcdef", "test"));
  std::filesystem::remove_all(dir);
}

TEST(Auth, LoopbackAddresses) {
  EXPECT_TRUE(is_loopback_address("127.0.0.1"));
  EXPECT_TRUE(is_loopback_address("127.3.4.5"));
  EXPECT_TRUE(is_loopback_address("::1"));
  EXPECT_TRUE(is_loopback_address("::ffff:127.0.0.1"));
  EXPECT_FALSE(is_loopback_address("10.0.0.1"));
  EXPECT_FALSE(is_loopback_address("::ffff:10.0.0.1"));
  EXPECT_FALSE(is_loopback_address("not an address"));
}

TEST(QueryString, UrlDecode) {
  EXPECT_EQ(url_decode("%7B%22op%22%3A%22matmul%22%7D"), "{\"op\":\"matmul\"}");
  EXPECT_EQ(url_decode("a+b"), "a b");
  EXPECT_THROW(url_decode("%G1"), Error);
  EXPECT_THROW(url_decode("%4"), Error);
}

}  // namespace
}  // namespace atvoss::rpc
