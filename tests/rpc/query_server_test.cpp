// The database query server (run_query_server, behind `atvoss-db serve`) and the bind
// rules: /v1/best exact and nearest answers from a real SQLite file, /v1/stats, the
// bearer-token rule, and the refusal to bind non-loopback addresses without a token.
#include <csignal>
#include <filesystem>
#include <thread>
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/asio.hpp>

#include "core/error.hpp"
#include "db/tuning_database.hpp"
#include "rpc/coordinator.hpp"
#include "rpc/log.hpp"
#include "rpc/query_server.hpp"
#include "simulator/presets.hpp"

namespace atvoss::rpc {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

std::uint16_t free_port() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

// status code and body of one request; status 0 if the server is not up.
std::pair<int, std::string> get(std::uint16_t port, const std::string& target, const std::string& auth = "") {
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  boost::system::error_code ec;
  s.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return {0, ""};
  std::string req = "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
  if (!auth.empty()) req += "Authorization: " + auth + "\r\n";
  asio::write(s, asio::buffer(req + "\r\n"), ec);
  std::string response;
  std::array<char, 4096> buf{};
  for (int i = 0; i < 1000; ++i) {
    const std::size_t n = s.read_some(asio::buffer(buf), ec);
    if (ec) break;
    response.append(buf.data(), n);
  }
  if (response.size() < 12) return {0, ""};
  const auto split = response.find("\r\n\r\n");
  return {std::stoi(response.substr(9, 3)), split == std::string::npos ? "" : response.substr(split + 4)};
}

TEST(QueryServer, ServesBestAndStatsFromADatabaseWithToken) {
  set_log_enabled(false);
  const auto dir = std::filesystem::temp_directory_path() / ("atvoss_qs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.db").string();
  const Target target = simulator::preset("ascend910");
  const Workload w = Workload::from_json(Json{{"op", "matmul"}, {"dims", {{"M", 512}, {"N", 512}, {"K", 512}}}});
  {
    auto database = db::TuningDatabase::open(path);
    Measurement fast, slow;
    fast.time_us = 10;
    fast.repeats = {10};
    slow.time_us = 20;
    slow.repeats = {20};
    std::vector<db::Record> records{db::Record(w, target, Schedule({{"tile_m", 64}}), fast),
                                    db::Record(w, target, Schedule({{"tile_m", 32}}), slow)};
    database.records().insert(records);
  }
  QueryServerOptions o;
  o.db_path = path;
  o.port = free_port();
  o.token = "qs-token-0123456789";
  o.threads = 1;
  std::thread server([&] { run_query_server(o); });
  for (int i = 0; i < 200 && get(o.port, "/v1/stats").first == 0; ++i) std::this_thread::sleep_for(10ms);

  EXPECT_EQ(get(o.port, "/v1/stats").first, 401);
  EXPECT_EQ(get(o.port, "/v1/stats", "Bearer wrong").first, 401);
  const auto stats = get(o.port, "/v1/stats", "Bearer qs-token-0123456789");
  EXPECT_EQ(stats.first, 200);
  EXPECT_EQ(Json::parse(stats.second).at("records"), 2);

  const std::string exact =
      "/v1/best?target=ascend910&workload=" +
      std::string("%7B%22op%22%3A%22matmul%22%2C%22dims%22%3A%7B%22M%22%3A512%2C%22N%22%3A512%2C%22K%22%3A512%7D%7D");
  const auto best = get(o.port, exact, "Bearer qs-token-0123456789");
  ASSERT_EQ(best.first, 200) << best.second;
  const Json answer = Json::parse(best.second);
  EXPECT_EQ(answer.at("match"), "exact");
  EXPECT_EQ(answer.at("schedule").at("tile_m"), 64);
  EXPECT_EQ(answer.at("time_us"), 10.0);

  const std::string near =
      "/v1/best?target=ascend910&workload=" +
      std::string("%7B%22op%22%3A%22matmul%22%2C%22dims%22%3A%7B%22M%22%3A500%2C%22N%22%3A512%2C%22K%22%3A512%7D%7D");
  const auto nearest = get(o.port, near, "Bearer qs-token-0123456789");
  ASSERT_EQ(nearest.first, 200) << nearest.second;
  EXPECT_EQ(Json::parse(nearest.second).at("match"), "nearest");
  EXPECT_EQ(get(o.port, "/v1/best?target=ascend910", "Bearer qs-token-0123456789").first, 400);
  EXPECT_EQ(get(o.port, "/nothing", "Bearer qs-token-0123456789").first, 404);
  // /metrics of a database server: its lookups and the database's gauges, no farm families.
  const std::string metrics = get(o.port, "/metrics", "Bearer qs-token-0123456789").second;
  EXPECT_THAT(metrics, testing::HasSubstr("\natvoss_query_latency_seconds_count 2\n"));
  EXPECT_THAT(metrics, testing::HasSubstr("\natvoss_db_records 2\n"));
  EXPECT_THAT(metrics, testing::Not(testing::HasSubstr("atvoss_farm_")));
  EXPECT_THAT(metrics, testing::HasSubstr("# HELP atvoss_query_measurements_total Lookups answered"));
  EXPECT_THAT(metrics, testing::Not(testing::HasSubstr("relayed")));  // the farm's words

  // A name two stored targets share is refused as `atvoss-db best` refuses it, listing the
  // keys; the server used to answer from whichever came first.
  {
    auto database = db::TuningDatabase::open(path);
    Measurement m;
    m.time_us = 5;
    m.repeats = {5};
    const db::TargetInfo twin{"00000000000000ff", "ascend910", Json{{"name", "ascend910"}, {"rev", 2}}};
    database.records().insert(db::Record(w, twin, Schedule({{"tile_m", 16}}), m));
  }
  const auto ambiguous = get(o.port, exact, "Bearer qs-token-0123456789");
  EXPECT_EQ(ambiguous.first, 400) << ambiguous.second;
  EXPECT_THAT(ambiguous.second, testing::HasSubstr("00000000000000ff"));
  EXPECT_THAT(ambiguous.second, testing::HasSubstr(target.key()));

  std::raise(SIGTERM);  // run_query_server's signal_set turns it into a clean stop
  server.join();
  std::filesystem::remove_all(dir);
}

TEST(QueryServer, MissingDatabaseFailsAtStartUp) {
  QueryServerOptions o;
  o.db_path = "/nonexistent/dir/none.db";
  o.port = free_port();
  EXPECT_THROW(run_query_server(o), Error);
}

TEST(CoordinatorBind, NonLoopbackAddressNeedsAToken) {
  CoordinatorOptions o;
  o.host = "0.0.0.0";
  o.port = 0;
  Coordinator farm(o);
  try {
    farm.start();
    FAIL() << "bound 0.0.0.0 without a token";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_THAT(e.what(), testing::HasSubstr("token"));
  }
}

}  // namespace
}  // namespace atvoss::rpc
