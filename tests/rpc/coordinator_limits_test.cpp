// Coordinator limits against peers that have not logged in (frame bound, eviction of the
// oldest waiting connection overall and per address,
// accept back-off at the descriptor limit) and its queue bookkeeping when clients leave.
// In-process coordinator on loopback; raw sockets play the peers that never log in.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <thread>
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/asio.hpp>

#include "core/error.hpp"
#include "eventually.hpp"
#include "rpc/channel.hpp"
#include "rpc/coordinator.hpp"
#include "rpc/log.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::rpc {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// A connection that speaks frames but never logs in unless told to.
class RawPeer {
 public:
  explicit RawPeer(std::uint16_t port) : socket_(io_) {
    socket_.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    socket_.non_blocking(true);
  }
  void send(const std::string& bytes) { asio::write(socket_, asio::buffer(bytes)); }
  // The next message, or nullopt when the server closed the connection or timeout passed.
  std::optional<Json> next(std::chrono::milliseconds timeout = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::array<char, 4096> buf{};
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto m = decoder_.next()) return m;
      boost::system::error_code ec;
      const std::size_t n = socket_.read_some(asio::buffer(buf), ec);
      if (ec == asio::error::would_block) {
        std::this_thread::sleep_for(5ms);
        continue;
      }
      if (ec) return std::nullopt;
      decoder_.feed(buf.data(), n);
    }
    return std::nullopt;
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
  FrameDecoder decoder_;
};

class CoordinatorLimits : public testing::Test {
 protected:
  void SetUp() override { set_log_enabled(std::getenv("ATVOSS_TEST_LOG") != nullptr); }
  void start(CoordinatorOptions o = {}) {
    o.port = 0;
    o.heartbeat_interval = 100ms;
    o.grace = 300ms;
    farm_ = std::make_unique<Coordinator>(o);
    farm_->start();
  }
  Endpoint endpoint() const { return Endpoint{"127.0.0.1", farm_->port()}; }
  // n connections that were greeted and never log in.
  std::vector<std::unique_ptr<RawPeer>> idle_peers(int n) {
    std::vector<std::unique_ptr<RawPeer>> idle;
    for (int i = 0; i < n; ++i) {
      idle.push_back(std::make_unique<RawPeer>(farm_->port()));
      EXPECT_EQ(idle.back()->next().value().at("type"), "hello");
    }
    return idle;
  }
  // The peer was told `busy` and closed.
  static void expect_evicted(RawPeer& peer) {
    const std::optional<Json> eviction = peer.next();
    ASSERT_TRUE(eviction.has_value());
    EXPECT_EQ(eviction->at("code"), "busy");
    EXPECT_FALSE(peer.next(1s).has_value());
  }
  template <typename Pred>
  bool eventually(Pred pred) {
    return rpc::eventually(*farm_, pred);
  }
  std::unique_ptr<Coordinator> farm_;
};

std::string header_announcing(std::uint32_t n) {
  std::string h(4, '\0');
  for (int i = 0; i < 4; ++i) h[i] = static_cast<char>(n >> (24 - 8 * i));
  return h;
}

TEST_F(CoordinatorLimits, FramesBeforeLoginAreBoundedSmall) {
  CoordinatorOptions o;
  o.login_timeout = 3s;
  start(o);
  RawPeer peer(farm_->port());
  ASSERT_EQ(peer.next().value().at("type"), "hello");
  // 5000 bytes is far below the 16 MiB bound for logged-in peers, but not a login.
  peer.send(header_announcing(5000));
  const std::optional<Json> answer = peer.next(2s);  // before the 3 s login timeout
  ASSERT_TRUE(answer.has_value()) << "no answer: the farm waited to buffer the frame";
  ASSERT_EQ(answer->value("type", ""), "error") << answer->dump();  // not even a heartbeat first
  EXPECT_EQ(answer->at("code"), "protocol");
  EXPECT_THAT(answer->at("message").get<std::string>(), testing::HasSubstr("maximum of 4096"));
}

// A frame bound that no login fits, or one that lets a frame take gigabytes, is bad input.
TEST_F(CoordinatorLimits, FrameBoundOutsideItsRangeIsRefused) {
  for (std::size_t bound : {std::size_t{0}, std::size_t{100}, (std::size_t{1} << 30) + 1}) {
    CoordinatorOptions o;
    o.port = 0;
    o.max_frame_bytes = bound;
    Coordinator farm(o);
    try {
      farm.start();
      ADD_FAILURE() << "accepted --max-frame-bytes " << bound;
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_THAT(e.what(), testing::HasSubstr("--max-frame-bytes"));
    }
  }
}

TEST_F(CoordinatorLimits, LargeFramesAreAcceptedAfterLogin) {
  start();
  ChannelOptions co;
  co.role = Role::query;
  auto query = Channel::open(endpoint(), co);
  query->send(Json{{"type", "stats"}, {"padding", std::string(100'000, 'p')}});
  for (int i = 0; i < 50; ++i) {
    if (auto m = query->receive(100ms); m && m->at("type") == "stats") return;
  }
  FAIL() << "a 100 KB frame after login was not served";
}

TEST_F(CoordinatorLimits, IdleConnectionsCannotKeepALoginOut) {
  CoordinatorOptions o;
  o.max_unauthenticated = 3;
  o.login_timeout = 10s;
  start(o);
  {
    const auto idle = idle_peers(3);
    // A fourth peer takes the oldest idle one's place, and logs in.
    ChannelOptions co;
    co.role = Role::client;
    const auto client = Channel::open(endpoint(), co);
    expect_evicted(*idle.front());
    EXPECT_FALSE(idle[1]->next(200ms).has_value());  // the others still wait
    EXPECT_EQ(farm_->stats().at("rejected_connections").value("busy", 0), 1);
    EXPECT_TRUE(eventually([](const Json& s) { return s.at("sessions") == 3; }));  // two idle, the client
  }
  // The idle peers left: their places are free again, and logged-in sessions take none.
  ASSERT_TRUE(eventually([](const Json& s) { return s.at("sessions") == 0; }));
  ChannelOptions co;
  co.role = Role::client;
  std::vector<std::unique_ptr<Channel>> clients;
  for (int i = 0; i < 5; ++i) clients.push_back(Channel::open(endpoint(), co));
  EXPECT_EQ(farm_->stats().at("sessions"), 5);
}

TEST_F(CoordinatorLimits, OneAddressHoldsAtMostItsShareOfTheWaitingPlaces) {
  CoordinatorOptions o;
  o.max_unauthenticated = 10;
  o.max_unauthenticated_per_address = 2;
  o.login_timeout = 10s;
  start(o);
  const auto idle = idle_peers(3);
  // Three from 127.0.0.1 with room for ten overall: the first gave way all the same.
  expect_evicted(*idle.front());
  EXPECT_FALSE(idle[1]->next(200ms).has_value());
  EXPECT_FALSE(idle[2]->next(200ms).has_value());
}

// Lowers RLIMIT_NOFILE and fills the descriptor table; restores both when destroyed.
class DescriptorsExhausted {
 public:
  DescriptorsExhausted() {
    getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit low = saved_;
    low.rlim_cur = std::min<rlim_t>(saved_.rlim_cur, 512);
    setrlimit(RLIMIT_NOFILE, &low);
    for (;;) {
      const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) break;
      fds_.push_back(fd);
    }
  }
  // Frees one descriptor for the caller's own use.
  void free_one() {
    ::close(fds_.back());
    fds_.pop_back();
  }
  ~DescriptorsExhausted() {
    for (int fd : fds_) ::close(fd);
    setrlimit(RLIMIT_NOFILE, &saved_);
  }

 private:
  rlimit saved_{};
  std::vector<int> fds_;
};

TEST_F(CoordinatorLimits, AcceptBacksOffAtTheDescriptorLimitAndRecovers) {
  start();
  int client_fd = -1;
  {
    DescriptorsExhausted exhausted;
    exhausted.free_one();
    // Our connection takes the last descriptor; the kernel completes it into the backlog,
    // and the farm's accept() fails with EMFILE for as long as the table stays full.
    client_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(client_fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(farm_->port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const auto connected = std::chrono::steady_clock::now();
    ASSERT_EQ(::connect(client_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    // A spinning loop fails accept() three times within microseconds; backing off 100 ms
    // between tries cannot fail it a third time before two pauses have passed.
    ASSERT_TRUE(eventually([](const Json& s) { return s.at("rejected_connections").value("accept_failed", 0) >= 3; }));
    EXPECT_GE(std::chrono::steady_clock::now() - connected, 200ms);
  }
  // Descriptors are back: the waiting connection is accepted and greeted.
  std::string received;
  std::array<char, 512> buf{};
  timeval tv{5, 0};
  setsockopt(client_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const ssize_t n = ::recv(client_fd, buf.data(), buf.size(), 0);
  ::close(client_fd);
  ASSERT_GT(n, 4);
  FrameDecoder decoder;
  decoder.feed(buf.data(), static_cast<std::size_t>(n));
  EXPECT_EQ(decoder.next().value().at("type"), "hello");
}

TEST_F(CoordinatorLimits, QueueEntriesOfADepartedClientAreReclaimed) {
  start();
  {
    ChannelOptions co;
    co.role = Role::client;
    auto client = Channel::open(endpoint(), co);
    Json items = Json::array();
    for (int i = 0; i < 50; ++i) {
      items.push_back(Json{{"id", i},
                           {"target", "no-worker-serves-this-" + std::to_string(i % 5)},
                           {"request", encode_body(Json{{"n", i}})}});
    }
    client->send(Json{{"type", "submit"}, {"items", std::move(items)}});
    ASSERT_TRUE(eventually([](const Json& s) { return s.at("queue_entries") == 50; })) << farm_->stats().dump();
  }
  // The client went away: nobody waits for its tasks, so nothing of them may stay.
  ASSERT_TRUE(eventually([](const Json& s) { return s.at("sessions") == 0; }));
  const Json stats = farm_->stats();
  EXPECT_EQ(stats.at("tasks_pending"), 0) << stats.dump();
  EXPECT_EQ(stats.at("queue_depth"), 0) << stats.dump();
  EXPECT_EQ(stats.at("queue_entries"), 0) << stats.dump();
}

}  // namespace
}  // namespace atvoss::rpc
