// Bad peers against a token-protected atvoss-farm process: each is rejected with an error
// (or dropped), and a good client and worker keep being served throughout.
#include <sys/stat.h>

#include <array>
#include <fstream>
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/asio.hpp>

#include "farm_harness.hpp"
#include "rpc/frame.hpp"
#include "rpc/log.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::farm_test {
namespace {

namespace asio = boost::asio;
const std::string kToken = "farm-token-for-tests";

class FarmBadPeers : public testing::Test {
 protected:
  void SetUp() override {
    rpc::set_log_enabled(false);
    // The token reaches the processes through the environment, never argv.
    farm_ = start_farm(dir_, {"--login-timeout-ms", "500"}, {{"ATVOSS_TOKEN", kToken}});
    worker_ = start_worker(farm_.port, 2, {}, {{"ATVOSS_TOKEN", kToken}});
    wait_for_workers(farm_.port, 1, 15s, kToken);
  }

  // The good client: must be served before and after every bad peer.
  void expect_served(std::uint64_t seed) {
    rpc::FarmClientOptions o;
    o.farm = rpc::Endpoint{"127.0.0.1", farm_.port};
    o.token = kToken;
    o.reconnect_for = 10s;
    rpc::FarmClient client(o);
    const auto reqs = requests(10, seed);
    const auto got = client.measure(reqs);
    ASSERT_EQ(got.size(), reqs.size());
    for (const Measurement& m : got) EXPECT_FALSE(is_infrastructure_error(m.status)) << m.message;
  }

  void expect_login_refused(const rpc::ChannelOptions& o, const char* code) {
    try {
      rpc::Channel::open(rpc::Endpoint{"127.0.0.1", farm_.port}, o);
      ADD_FAILURE() << "login accepted; expected " << code;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::protocol);
      EXPECT_THAT(e.what(), testing::HasSubstr(code));
      EXPECT_THAT(e.what(), testing::Not(testing::HasSubstr(kToken)));  // never echoed
    }
  }

  // Sends raw bytes right after connecting (before login) and reads everything until the
  // server closes, bounded at 5 s. Returns the bytes received.
  std::string raw_exchange(const std::string& bytes, bool half_close = false) {
    asio::io_context io;
    asio::ip::tcp::socket s(io);
    s.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), farm_.port));
    boost::system::error_code write_error;  // the farm may close before reading it all: fine
    asio::write(s, asio::buffer(bytes), write_error);
    if (half_close) s.shutdown(asio::ip::tcp::socket::shutdown_send);
    std::string received;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    s.non_blocking(true);
    std::array<char, 4096> buf{};
    while (std::chrono::steady_clock::now() < deadline) {
      boost::system::error_code ec;
      const std::size_t n = s.read_some(asio::buffer(buf), ec);
      if (ec == asio::error::would_block) {
        std::this_thread::sleep_for(10ms);
        continue;
      }
      if (ec) return received;  // closed by the server
      received.append(buf.data(), n);
    }
    ADD_FAILURE() << "the server kept a bad connection open for 5 s";
    return received;
  }

  // Decodes the frames in bytes (hello first, then the error) and returns the error's code.
  static std::string error_code_in(const std::string& bytes) {
    rpc::FrameDecoder decoder;
    decoder.feed(bytes.data(), bytes.size());
    while (auto m = decoder.next()) {
      if (m->at("type") == "error") return m->value("code", std::string());
    }
    return "";
  }

  TempDir dir_;
  Farm farm_;
  Child worker_;
};

TEST_F(FarmBadPeers, WrongOrMissingTokenIsRefused) {
  expect_served(1);
  rpc::ChannelOptions o;
  o.token = "not-the-farm-token-0123";
  expect_login_refused(o, "auth_failed");
  o.token.reset();
  expect_login_refused(o, "auth_failed");
  expect_served(2);
}

TEST_F(FarmBadPeers, WrongProtocolVersionIsRefused) {
  rpc::ChannelOptions o;
  o.token = kToken;
  o.version = rpc::kProtocolVersion + 1;
  expect_login_refused(o, "version_mismatch");
  expect_served(3);
}

TEST_F(FarmBadPeers, OversizedFrameIsRefusedFromItsHeader) {
  // Announces 64 MiB (over the 16 MiB limit) and sends nothing more: refused at once.
  const std::string reply = raw_exchange(std::string("\x04\x00\x00\x00", 4));
  EXPECT_EQ(error_code_in(reply), "protocol");
  expect_served(4);
}

TEST_F(FarmBadPeers, TruncatedFrameIsDropped) {
  std::string frame = rpc::encode_frame(Json{{"type", "login"}, {"version", 1}, {"role", "client"}});
  frame.resize(frame.size() / 2);
  raw_exchange(frame, /*half_close=*/true);
  expect_served(5);
  const Json stats = farm_stats(farm_.port, kToken);
  EXPECT_EQ(stats.at("rejected_connections").value("truncated_frame", 0), 1) << stats.dump();
}

TEST_F(FarmBadPeers, RandomBytesAreRefused) {
  std::mt19937_64 rng(99);
  std::string junk(2048, '\0');
  for (char& c : junk) c = static_cast<char>(rng() % 256);
  junk[0] = 0;  // keep the length under the limit so the payload itself is what is bad
  junk[1] = 0;
  junk[2] = 4;
  junk[3] = 0;
  const std::string reply = raw_exchange(junk);
  EXPECT_EQ(error_code_in(reply), "protocol");
  expect_served(6);
  EXPECT_EQ(farm_stats(farm_.port, kToken).at("workers").size(), 1u);
}

TEST_F(FarmBadPeers, DeeplyNestedFramesAreRefusedAndTheFarmLivesOn) {
  // The attack: a frame nested hundreds of thousands deep used to overflow the
  // decoder's stack (SIGSEGV, every session lost). Before login it is now too long for the
  // 4 KiB login bound; after login the nesting bound refuses it.
  std::string deep;
  deep += '\x82';
  deep += "\xa4type\xa6submit\xa5items";
  deep.append(400'000, '\x91');
  deep += '\x01';
  std::string frame(4, '\0');
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>(deep.size() >> (24 - 8 * i));
  frame += deep;
  // Before login the header alone is refused (the length): send it and a little of the
  // body, so the farm's close cannot race a 400 KB write into a broken pipe.
  EXPECT_EQ(error_code_in(raw_exchange(frame.substr(0, 4 + 1024))), "protocol");
  rpc::ChannelOptions o;
  o.token = kToken;
  auto logged_in = rpc::Channel::open(rpc::Endpoint{"127.0.0.1", farm_.port}, o);
  logged_in->send_raw(frame);
  try {
    for (int i = 0; i < 50; ++i) logged_in->receive(100ms);
    ADD_FAILURE() << "the farm kept a connection that sent a 400k-deep frame";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("nested deeper than 64"));
  }
  EXPECT_FALSE(farm_.process.wait_for(0ms).has_value()) << "the farm died";
  expect_served(7);
  EXPECT_EQ(farm_stats(farm_.port, kToken).at("workers").size(), 1u);  // the worker's session survived
}

// A request's fusion rules (rpc/protocol.hpp) that the worker cannot take: a built-in's name,
// a malformed declaration, more than 64 rules. Each item is answered error naming the field
// (an infrastructure status, never stored), and the worker serves on.
TEST_F(FarmBadPeers, BadFusionRulesInARequestAreAnsweredErrorNamingThem) {
  const Json good_rule = {{"name", "test-r"}, {"pattern", {"matmul", "bias"}}, {"max_fusion_depth", 1}};
  Json too_many = Json::array();
  for (int i = 0; i < 65; ++i) too_many.push_back(good_rule);
  const std::vector<std::pair<Json, std::string>> cases = {
      {Json::array({{{"name", "elementwise"}, {"pattern", {"matmul", "bias"}}, {"max_fusion_depth", 1}}}),
       "fusion_rules[0]"},
      {Json::array({{{"name", "test-r"}, {"pattern", "matmul"}, {"max_fusion_depth", 1}}}), "fusion_rules[0]"},
      {too_many, "at most 64"},
      {Json("matmul"), "field 'fusion_rules'"}};
  rpc::FarmClientOptions o;
  o.farm = rpc::Endpoint{"127.0.0.1", farm_.port};
  o.token = kToken;
  o.reconnect_for = 10s;
  rpc::FarmClient client(o);
  for (const auto& [rules, says] : cases) {
    SCOPED_TRACE(rules.dump().substr(0, 200));
    std::vector<rpc::FarmRequest> reqs = requests(1, 7);
    reqs[0].fusion_rules = rules;
    const std::vector<Measurement> got = client.measure(reqs);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status, Status::error);
    EXPECT_THAT(got[0].message, testing::HasSubstr(says));
  }
  std::vector<rpc::FarmRequest> ruled = requests(1, 7);
  ruled[0].fusion_rules = Json::array({good_rule});
  EXPECT_EQ(client.measure(ruled)[0].status, Status::ok);
  expect_served(91);
}

TEST_F(FarmBadPeers, SilentPeerIsDroppedAfterTheLoginTimeout) {
  // Connects, says nothing: the farm must not keep the slot forever (login timeout 0.5 s here).
  const std::string reply = raw_exchange("");
  EXPECT_EQ(error_code_in(reply), "login_timeout");
}

// A blank token is a configuration error in every program that takes one: exit 2 at once,
// never a farm that listens with an empty HMAC key.
TEST(FarmTokens, BlankTokenFromEnvironmentOrFileExitsTwo) {
  TempDir dir;
  const std::string blank_file = dir.file("blank.token");
  std::ofstream(blank_file) << "  \t\n";
  ::chmod(blank_file.c_str(), 0600);  // private, so that blankness is what is refused
  const std::map<std::string, std::string> blank_env{{"ATVOSS_TOKEN", " \n"}};
  std::vector<std::pair<std::string, Child>> runs;
  runs.emplace_back("farm, env", Child({bin("atvoss-farm"), "--port", "0", "--host", "0.0.0.0", "--quiet"}, blank_env));
  runs.emplace_back("farm, file", Child({bin("atvoss-farm"), "--port", "0", "--quiet", "--token-file", blank_file}));
  runs.emplace_back(
      "worker, env",
      Child({bin("atvoss-worker"), "--farm", "127.0.0.1:1", "--target", "ascend910", "--quiet"}, blank_env));
  runs.emplace_back("worker, file", Child({bin("atvoss-worker"), "--farm", "127.0.0.1:1", "--target", "ascend910",
                                           "--quiet", "--token-file", blank_file}));
  for (auto& [name, child] : runs) {
    SCOPED_TRACE(name);
    EXPECT_EQ(child.wait_for(10s), std::optional<int>(2));
  }
}

}  // namespace
}  // namespace atvoss::farm_test
