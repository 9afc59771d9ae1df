// The HTTP endpoint's edges: every malformed, oversized or non-UTF-8 request gets a status
// line (400 / 413 / 431) instead of a dropped connection, peer text that is not UTF-8
// cannot break an answer, HEAD answers as GET without a body; idle connections cannot keep
// a request out (header deadline, eviction of the oldest waiting connection overall and per
// address), a wrong token is answered before any body, and served connections are capped.
// A QueryServer with scripted handlers on loopback; requests are raw bytes.
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <thread>
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/asio.hpp>

#include "core/error.hpp"
#include "rpc/log.hpp"
#include "rpc/query_server.hpp"

namespace atvoss::rpc {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

struct Reply {
  int status = 0;  // 0: the connection closed without a status line
  std::string headers;
  std::string body;
  std::string header(const std::string& name) const {
    const auto at = headers.find("\r\n" + name + ": ");
    if (at == std::string::npos) return "";
    const auto start = at + name.size() + 4;
    return headers.substr(start, headers.find("\r\n", start) - start);
  }
};

class QueryServerEdges : public testing::Test {
 protected:
  void SetUp() override {
    set_log_enabled(std::getenv("ATVOSS_TEST_LOG") != nullptr);
    QueryHandlers h;
    // A worker's name is the peer's bytes: here not UTF-8.
    h.stats = [] { return Json{{"workers", {Json{{"name", "w\xff\xfe"}}}}}; };
    h.metrics = [] { return std::string("atvoss_test 1\n"); };
    // Like the database handler, it names the unknown target it was given.
    h.best = [](const Json& request) -> Json {
      throw Error(ErrorKind::bad_input, "target '" + request.at("target").get<std::string>() + "' is unknown");
    };
    handlers_ = std::move(h);
    start(std::nullopt, {});
  }
  void start(std::optional<std::string> token, QueryServerLimits limits) {
    if (server_) stop();
    io_.restart();
    server_ = std::make_unique<QueryServer>(io_, "127.0.0.1", 0, std::move(token), handlers_, limits);
    thread_ = std::thread([this] { io_.run(); });
  }
  void stop() {
    server_->stop();
    io_.stop();
    thread_.join();
    server_.reset();
  }
  void TearDown() override { stop(); }
  std::unique_ptr<asio::ip::tcp::socket> connect_idle(asio::io_context& io) {
    auto s = std::make_unique<asio::ip::tcp::socket>(io);
    s->connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
    return s;
  }
  // True if the server closed s within timeout without sending anything.
  // (poll: asio's blocking read ignores SO_RCVTIMEO.)
  static bool closed_silently(asio::ip::tcp::socket& s, std::chrono::milliseconds timeout = 5s) {
    pollfd p{s.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return false;
    char byte = 0;
    const ssize_t n = ::recv(s.native_handle(), &byte, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

  // Sends raw bytes (then half-closes unless keep_open) and reads until the server closes.
  Reply exchange(const std::string& request, bool keep_open = false) {
    asio::io_context io;
    asio::ip::tcp::socket s(io);
    s.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
    boost::system::error_code ec;
    asio::write(s, asio::buffer(request), ec);
    if (!keep_open) s.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    timeval tv{5, 0};
    setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string response;
    std::array<char, 4096> buf{};
    for (;;) {
      const std::size_t n = s.read_some(asio::buffer(buf), ec);
      if (ec) break;
      response.append(buf.data(), n);
    }
    Reply r;
    const auto split = response.find("\r\n\r\n");
    if (response.rfind("HTTP/1.", 0) != 0 || split == std::string::npos) return r;
    r.status = std::stoi(response.substr(9, 3));
    r.headers = response.substr(0, split + 2);
    r.body = response.substr(split + 4);
    return r;
  }
  static std::string post(const std::string& body, const std::string& extra_headers = "") {
    return "POST /v1/best HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n" + extra_headers + "\r\n" + body;
  }
  static std::string get(const std::string& target, const std::string& method = "GET") {
    return method + " " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  }
  // The error text of a JSON error answer ("" if the body is not such JSON).
  static std::string error_of(const Reply& r) {
    const Json j = Json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("error") ? j["error"].get<std::string>() : "";
  }

  QueryHandlers handlers_;
  asio::io_context io_;
  std::unique_ptr<QueryServer> server_;
  std::thread thread_;
};

TEST_F(QueryServerEdges, InvalidUtf8InAQueryOrBodyIsA400) {
  const Reply query = exchange(get("/v1/best?target=%FF%FE&workload=%7B%7D"));
  EXPECT_EQ(query.status, 400);
  EXPECT_THAT(error_of(query), testing::HasSubstr("query parameter 'target': not valid UTF-8"));
  const Reply body = exchange(post("{\"target\":\"\xff\",\"workload\":{}}"));
  EXPECT_EQ(body.status, 400);
  EXPECT_THAT(error_of(body), testing::HasSubstr("/v1/best request body: invalid JSON"));
  // Valid UTF-8 goes through to the handler, whose error names it.
  const Reply named = exchange(post("{\"target\":\"caf\xc3\xa9\",\"workload\":{}}"));
  EXPECT_EQ(named.status, 400);
  EXPECT_THAT(error_of(named), testing::HasSubstr("caf\xc3\xa9"));
}

TEST_F(QueryServerEdges, PeerTextThatIsNotUtf8CannotBreakAnAnswer) {
  const Reply stats = exchange(get("/v1/stats"));
  ASSERT_EQ(stats.status, 200);
  EXPECT_EQ(Json::parse(stats.body).at("workers").at(0).at("name"), "w\xef\xbf\xbd\xef\xbf\xbd");  // U+FFFD twice
}

TEST_F(QueryServerEdges, OversizedHeadersAndBodiesGet431And413) {
  const Reply headers = exchange("GET /v1/stats HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(20000, 'a') + "\r\n\r\n");
  EXPECT_EQ(headers.status, 431);
  // The body is refused from its Content-Length, while the peer is still sending it.
  const std::string big(2u << 20, ' ');
  const Reply body = exchange(post(big));
  EXPECT_EQ(body.status, 413);
  EXPECT_THAT(error_of(body), testing::HasSubstr("at most 1048576 bytes"));
  // Chunked, so the size is known only as it arrives.
  std::string chunked = "POST /v1/best HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 40; ++i) chunked += "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
  chunked += "0\r\n\r\n";
  EXPECT_EQ(exchange(chunked).status, 413);
}

TEST_F(QueryServerEdges, BadFramingGets400) {
  const struct {
    const char* name;
    std::string request;
  } kCases[] = {
      {"negative Content-Length", "POST /v1/best HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n{}"},
      {"two Content-Lengths", "POST /v1/best HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"},
      {"chunk size not hex",
       "POST /v1/best HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"},
      {"chunk longer than its size",
       "POST /v1/best HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcdef\r\n0\r\n\r\n"},
      {"bad request line", "GET\x01 / HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"bad header field", "GET /v1/stats HTTP/1.1\r\nHo st: x\r\n\r\n"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const Reply r = exchange(c.request);
    EXPECT_EQ(r.status, 400);
    EXPECT_THAT(error_of(r), testing::HasSubstr("bad HTTP request"));
    EXPECT_EQ(r.header("Connection"), "close");
  }
}

TEST_F(QueryServerEdges, DeeplyNestedJsonIsA400NamingTheLimit) {
  const Reply r =
      exchange(post("{\"target\":\"t\",\"workload\":" + std::string(200000, '[') + std::string(200000, ']') + "}"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(error_of(r), testing::HasSubstr("nested deeper than 64"));
}

TEST_F(QueryServerEdges, HeadAnswersAsGetWithoutABody) {
  for (const std::string path : {"/v1/stats", "/metrics"}) {
    SCOPED_TRACE(path);
    const Reply full = exchange(get(path));
    const Reply head = exchange(get(path, "HEAD"));
    ASSERT_EQ(full.status, 200);
    EXPECT_EQ(head.status, 200);
    EXPECT_EQ(head.header("Content-Length"), std::to_string(full.body.size()));
    EXPECT_EQ(head.header("Content-Type"), full.header("Content-Type"));
    EXPECT_EQ(head.body, "");
  }
  EXPECT_EQ(exchange(get("/v1/stats", "DELETE")).status, 405);
}

TEST_F(QueryServerEdges, IdleConnectionsCannotKeepARequestOut) {
  // 100 connections that never send a header (more than the 64 waiting places), all from
  // 127.0.0.1 (more than its 16): a request that sends its header at once is served at once.
  asio::io_context io;
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> idle;
  for (int i = 0; i < 100; ++i) idle.push_back(connect_idle(io));
  EXPECT_EQ(exchange(get("/v1/stats")).status, 200);
  // The oldest gave way: the first 84 are closed (the server sends nothing), the last 16 wait.
  for (int i = 0; i < 84; ++i) EXPECT_TRUE(closed_silently(*idle[i])) << "idle connection " << i;
  EXPECT_FALSE(closed_silently(*idle[99], 1s));
}

TEST_F(QueryServerEdges, AHeaderMustArriveWithinTheHeaderTimeout) {
  QueryServerLimits limits;
  limits.header_timeout = 300ms;  // the default is 5 s; the read below waits at most 5 s
  start(std::nullopt, limits);
  asio::io_context io;
  const auto slow = connect_idle(io);
  asio::write(*slow, asio::buffer(std::string("GET /v1/stats HTTP/1.1\r\nHost: x\r\n")));
  const auto began = std::chrono::steady_clock::now();
  EXPECT_TRUE(closed_silently(*slow));
  EXPECT_LT(std::chrono::steady_clock::now() - began, 4s);
}

TEST_F(QueryServerEdges, AWrongTokenIsAnsweredBeforeTheBodyAndCloses) {
  start("edge-token-0123456789", {});
  // A body announced but never sent: the 401 must not wait for it.
  const Reply r = exchange("POST /v1/best HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n", true);
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_EQ(exchange(get("/v1/stats")).status, 401);
  const std::string authorised =
      "GET /v1/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
      "Authorization: Bearer edge-token-0123456789\r\n\r\n";
  EXPECT_EQ(exchange(authorised).status, 200);
}

TEST_F(QueryServerEdges, ServedConnectionsAreCapped) {
  QueryServerLimits limits;
  limits.max_served = 2;
  start(std::nullopt, limits);
  // Two keep-alive connections, each served once and left open, hold both places.
  asio::io_context io;
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> kept;
  const std::string keep_alive = "GET /v1/stats HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < 2; ++i) {
    kept.push_back(connect_idle(io));
    asio::write(*kept.back(), asio::buffer(keep_alive));
    std::array<char, 12> status{};
    asio::read(*kept.back(), asio::buffer(status));
    EXPECT_EQ(std::string(status.data(), status.size()), "HTTP/1.1 200");
  }
  const Reply busy = exchange(get("/v1/stats"));
  EXPECT_EQ(busy.status, 503);
  EXPECT_EQ(busy.header("Retry-After"), "1");
  kept.clear();
  Reply served;
  for (int i = 0; i < 100 && served.status != 200; ++i) {
    served = exchange(get("/v1/stats"));
    if (served.status != 200) std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(served.status, 200);
}

}  // namespace
}  // namespace atvoss::rpc
