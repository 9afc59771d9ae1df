// Login primitives: HMAC against RFC 4231, constant-time checks, token sources, loopback.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "rpc/auth.hpp"
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
  std::ofstream(file) << "from-file\n";
  ::setenv("ATVOSS_TOKEN", "from-env", 1);
  EXPECT_EQ(load_token(file).value(), "from-file");  // trailing newline trimmed
  EXPECT_EQ(load_token("").value(), "from-env");
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
