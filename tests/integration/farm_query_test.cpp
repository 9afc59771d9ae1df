// The HTTP query endpoint of a real atvoss-farm with --db and a token: results relayed by
// the farm land in its database, /v1/best answers exact and nearest-shape queries, and
// /metrics and /v1/stats follow the bearer-token rule.
#include <array>
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/asio.hpp>

#include "farm_harness.hpp"
#include "rpc/log.hpp"
#include "tests/db/pg_test_util.hpp"

namespace atvoss::farm_test {
namespace {

namespace asio = boost::asio;
const std::string kToken = "query-token-for-tests";

TEST(FarmQuery, BestStatsAndMetricsOverHttpWithToken) {
  rpc::set_log_enabled(false);
  TempDir dir;
  const std::map<std::string, std::string> env{{"ATVOSS_TOKEN", kToken}};
  Farm farm = start_farm(dir, {"--db", dir.file("farm.db"), "--http-port", "0"}, env);
  ASSERT_GT(farm.http_port, 0);
  Child worker = start_worker(farm.port, 2, {}, env);
  wait_for_workers(farm.port, 1, 15s, kToken);

  rpc::FarmClientOptions o;
  o.farm = rpc::Endpoint{"127.0.0.1", farm.port};
  o.token = kToken;
  rpc::FarmClient client(o);
  const auto reqs = requests(40, 21);
  const auto got = client.measure(reqs);
  double fastest = 1e300;
  for (const Measurement& m : got) {
    if (m.ok()) fastest = std::min(fastest, m.time_us);
  }
  ASSERT_LT(fastest, 1e300) << "no valid schedule measured";

  // Token rule: nothing without the bearer token, not even metrics.
  EXPECT_EQ(http(farm.http_port, "GET", "/metrics", std::nullopt).status, 401);
  EXPECT_EQ(http(farm.http_port, "GET", "/metrics", std::string("wrong")).status, 401);
  const HttpReply metrics = http(farm.http_port, "GET", "/metrics", kToken);
  EXPECT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.body, testing::HasSubstr("atvoss_farm_workers 1"));
  EXPECT_THAT(metrics.body, testing::HasSubstr("atvoss_farm_measurements_total{status=\"ok\"}"));
  const HttpReply stats = http(farm.http_port, "GET", "/v1/stats", kToken);
  EXPECT_EQ(stats.status, 200);
  EXPECT_EQ(Json::parse(stats.body).at("answered"), reqs.size());
  EXPECT_EQ(http(farm.http_port, "DELETE", "/v1/stats", kToken).status, 405);  // read-only

  // The farm-wide log is written in the background, a batch at a time: poll /v1/best
  // (bounded) until the fastest result has landed.
  const Json workload = reqs.front().workload;
  const std::string query = "/v1/best?target=ascend910&workload=" + url_encode(workload.dump());
  HttpReply best;
  for (int i = 0; i < 100; ++i) {
    best = http(farm.http_port, "GET", query, kToken);
    if (best.status == 200 && Json::parse(best.body).at("time_us").get<double>() == fastest) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(best.status, 200) << best.body;
  const Json answer = Json::parse(best.body);
  EXPECT_EQ(answer.at("match"), "exact");
  EXPECT_DOUBLE_EQ(answer.at("time_us").get<double>(), fastest);

  // A shape never measured gets the nearest measured one, flagged as such (POST form).
  Json other = workload;
  other["dims"]["M"] = 1000;
  const HttpReply nearest =
      http(farm.http_port, "POST", "/v1/best", kToken, Json{{"target", "ascend910"}, {"workload", other}}.dump());
  ASSERT_EQ(nearest.status, 200) << nearest.body;
  EXPECT_EQ(Json::parse(nearest.body).at("match"), "nearest");

  EXPECT_EQ(
      http(farm.http_port, "GET", "/v1/best?target=nowhere&workload=" + url_encode(workload.dump()), kToken).status,
      404);
  EXPECT_EQ(http(farm.http_port, "GET", "/v1/best?target=ascend910&workload=%7Bbad", kToken).status, 400);
}

// A team's shared database: the farm's result writer and a separate query service
// (atvoss-db serve) both name one PostgreSQL database, and the service answers with what
// the farm stored, live, without a merge or an export in between.
TEST(FarmQuery, AFarmAndAQueryServiceShareOnePostgresDatabaseLive) {
  rpc::set_log_enabled(false);
  TempDir dir;
  db::testing::PgSchema schema;
  const std::map<std::string, std::string> env{{"ATVOSS_TOKEN", kToken}};
  Farm farm = start_farm(dir, {"--db", schema.url()}, env);
  Child worker = start_worker(farm.port, 2, {}, env);
  wait_for_workers(farm.port, 1, 15s, kToken);
  const std::uint16_t port = free_port();
  Child server({bin("atvoss-db"), "--db", schema.url(), "serve", "--port", std::to_string(port)}, env);
  EXPECT_EQ(wait_for_http(port, kToken).status, 200);

  rpc::FarmClientOptions o;
  o.farm = rpc::Endpoint{"127.0.0.1", farm.port};
  o.token = kToken;
  rpc::FarmClient client(o);
  const auto reqs = requests(24, 5);
  double fastest = 1e300;
  for (const Measurement& m : client.measure(reqs)) {
    if (m.ok()) fastest = std::min(fastest, m.time_us);
  }
  ASSERT_LT(fastest, 1e300) << "no valid schedule measured";
  const std::string query = "/v1/best?target=ascend910&workload=" + url_encode(reqs.front().workload.dump());
  HttpReply best;
  for (int i = 0; i < 200; ++i) {
    best = http(port, "GET", query, kToken);
    if (best.status == 200 && Json::parse(best.body).at("time_us").get<double>() == fastest) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(best.status, 200) << best.body;
  EXPECT_EQ(Json::parse(best.body).at("match"), "exact");
  EXPECT_DOUBLE_EQ(Json::parse(best.body).at("time_us").get<double>(), fastest);
  const Json stats = Json::parse(http(port, "GET", "/v1/stats", kToken).body);
  EXPECT_EQ(stats.at("records").get<std::size_t>(), reqs.size()) << stats.dump();
  // /metrics counts the server database's rows; it has no file, so no file change time.
  const HttpReply metrics = http(port, "GET", "/metrics", kToken);
  EXPECT_THAT(metrics.body, testing::HasSubstr("\natvoss_db_records 24\n"));
  EXPECT_THAT(metrics.body, testing::Not(testing::HasSubstr("atvoss_db_last_write_timestamp_seconds")));
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_for(10s), std::optional<int>(0));
}

}  // namespace
}  // namespace atvoss::farm_test
