// `atvoss-db serve` as a real process: another compiler asks a tuning database filled by
// atvoss-tune for the best schedule over HTTP, with the bearer-token rule, and the server
// stops cleanly on SIGTERM.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "farm_harness.hpp"

namespace atvoss::farm_test {
namespace {

const std::string kToken = "serve-token-for-tests";
const Json kWorkload = {{"op", "matmul"}, {"dims", {{"M", 512}, {"N", 512}, {"K", 256}}}};

int run(const std::vector<std::string>& argv) {
  Child c(argv);
  return c.wait_for(120s).value_or(-1);
}

HttpReply wait_for_server(std::uint16_t port) { return wait_for_http(port, kToken); }

TEST(DbServe, AnswersBestFromTheDatabaseWithToken) {
  TempDir dir;
  const std::string db = dir.file("tuned.db");
  ASSERT_EQ(run({bin("atvoss-tune"), "--target", "ascend910", "--workload", kWorkload.dump(), "--trials", "24",
                 "--strategy", "random", "--db", db, "--seed", "3", "--quiet"}),
            0);
  const std::string best_file = dir.file("best.json");
  // The tool's own answer is the reference the HTTP answer must agree with.
  {
    const std::string cmd = bin("atvoss-db") + " --db " + db + " --json best -k 1 --target ascend910 --workload '" +
                            kWorkload.dump() + "' > " + best_file;
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  std::ifstream in(best_file);
  const Json expected = Json::parse(in);
  ASSERT_TRUE(expected.is_array() && !expected.empty()) << expected.dump();

  const std::uint16_t port = free_port();
  Child server({bin("atvoss-db"), "--db", db, "serve", "--port", std::to_string(port)}, {{"ATVOSS_TOKEN", kToken}});
  EXPECT_EQ(wait_for_server(port).status, 200);

  const std::string query = "/v1/best?target=ascend910&workload=" + url_encode(kWorkload.dump());
  EXPECT_EQ(http(port, "GET", query, std::nullopt).status, 401);
  EXPECT_EQ(http(port, "GET", query, std::string("not-the-token")).status, 401);
  const HttpReply best = http(port, "GET", query, kToken);
  ASSERT_EQ(best.status, 200) << best.body;
  const Json answer = Json::parse(best.body);
  EXPECT_EQ(answer.at("match"), "exact");
  EXPECT_EQ(answer.at("schedule"), expected[0].at("schedule"));
  EXPECT_DOUBLE_EQ(answer.at("time_us").get<double>(), expected[0].at("measurement").at("time_us").get<double>());

  // /metrics: the lookups it answered and what the database holds, not a farm's zeros.
  const HttpReply metrics = http(port, "GET", "/metrics", kToken);
  ASSERT_EQ(metrics.status, 200);
  const auto gauge = [&](const std::string& name) {
    const auto at = metrics.body.find("\n" + name + " ");
    if (at == std::string::npos) return -1.0;
    return std::stod(metrics.body.substr(at + name.size() + 2));
  };
  EXPECT_EQ(gauge("atvoss_db_records"), 24);
  EXPECT_EQ(gauge("atvoss_db_targets"), 1);
  EXPECT_EQ(gauge("atvoss_db_workloads"), 1);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GT(gauge("atvoss_db_last_write_timestamp_seconds"), now - 600);
  EXPECT_LT(gauge("atvoss_db_last_write_timestamp_seconds"), now + 5);
  EXPECT_THAT(metrics.body, testing::HasSubstr("atvoss_query_measurements_total{status=\"exact\"} 1\n"));
  EXPECT_THAT(metrics.body, testing::Not(testing::HasSubstr("atvoss_farm_")));

  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_for(10s), std::optional<int>(0));
}

TEST(DbServe, MissingDatabaseIsAnErrorNotAnEmptyServer) {
  TempDir dir;
  Child server({bin("atvoss-db"), "--db", dir.file("absent/none.db"), "serve", "--port", std::to_string(free_port())});
  const auto rc = server.wait_for(10s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_NE(*rc, 0);
}

}  // namespace
}  // namespace atvoss::farm_test
