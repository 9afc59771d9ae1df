// atvoss-db as a user runs it: real processes on real files, checking output, exit codes
// (0 ok, 2 bad input, 1 failure) and that a refused command leaves the data as it was.
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "cli_harness.hpp"
#include "core/json.hpp"

namespace {

using ::testing::HasSubstr;

using Result = atvoss::cli_test::CliResult;

class DbCliTest : public atvoss::cli_test::CliTest {
 protected:
  Result run(const std::string& args) const { return run_tool("atvoss-db", args); }

  std::string db(const std::string& name = "tune.db") const { return "--db " + quote(file(name)); }

  const std::string cache_ = std::string(ATVOSS_DATA_DIR) + "/recorded-spaces/pnpoly-RTX_3090.json.gz";
  const std::string gpu_ = "'NVIDIA GeForce RTX 3090'";
};

TEST_F(DbCliTest, KernelTunerImportThenStatsBestAndExportTable) {
  Result r = run(db() + " import " + quote(cache_));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("4092 added"));

  r = run(db() + " --json stats");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto stats = atvoss::parse_json(r.out, "stats");
  EXPECT_EQ(stats["records"], 4092);
  EXPECT_EQ(stats["by_status"]["runtime_error"], 330);

  r = run(db() + " stats");
  ASSERT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("NVIDIA GeForce RTX 3090"));

  const std::string workload = quote(R"({"op":"recorded","table":")" + cache_ + R"("})");
  r = run(db() + " --json best --workload " + workload + " --target " + gpu_ + " -k 2");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto best = atvoss::parse_json(r.out, "best");
  ASSERT_EQ(best.size(), 2u);
  EXPECT_NEAR(best[0]["measurement"]["time_us"].get<double>(), 7224.2, 0.1);

  r = run(db() + " export-table --target " + gpu_ + " -o " + quote(file("table.json")));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto table = atvoss::load_json_file(file("table.json"));
  EXPECT_EQ(table["header"]["record_count"], 1);
  EXPECT_EQ(table["header"]["target"]["name"], "NVIDIA GeForce RTX 3090");

  r = run(db() + " check");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("ok"));
}

TEST_F(DbCliTest, ExportImportAndMergeCarryEveryRecord) {
  ASSERT_EQ(run(db() + " import " + quote(cache_)).code, 0);
  Result r = run(db() + " export -o " + quote(file("all.jsonl")));
  ASSERT_EQ(r.code, 0) << r.err;
  r = run(db("copy.db") + " import " + quote(file("all.jsonl")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("4092 added"));
  r = run(db("copy.db") + " merge " + quote(file("tune.db")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("0 added, 4092 identical"));
  r = run(db("copy.db") + " prune -k 3");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("deleted 4089"));
}

TEST_F(DbCliTest, BadInputExitsTwoAndLeavesDataUntouched) {
  ASSERT_EQ(run(db() + " import " + quote(cache_)).code, 0);
  const std::string before = slurp(file("tune.db"));
  {
    std::ofstream bad(file("bad.jsonl"));
    bad << R"({"format":"atvoss-record","format_version":1,"workload":{"op":"matmul","dims":{"M":1,"N":1,"K":1}},)"
        << R"("target":{"key":"k","name":"n","description":{}},"schedule":{"tile_m":1}})" << "\n";
  }
  Result r = run(db() + " import " + quote(file("bad.jsonl")));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.jsonl:1"));
  EXPECT_THAT(r.err, HasSubstr("'measurement'"));

  r = run(db() + " best --workload '{\"op\":\"matmul\"}' --target ascend910");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("dims"));
  r = run(db() + " best --workload '{\"op\":\"matmul\",\"dims\":{\"M\":1,\"N\":1,\"K\":1}}' --target no-such-npu");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("no-such-npu"));
  r = run(db() + " query --status sideways");
  EXPECT_EQ(r.code, 2);
  r = run(db() + " prune -k 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(slurp(file("tune.db")), before);
  r = run(db() + " --json stats");
  EXPECT_EQ(atvoss::parse_json(r.out, "stats")["records"], 4092);
}

TEST_F(DbCliTest, DamagedOrMissingDatabaseFailsWithAClearMessage) {
  {
    std::ofstream garbage(file("garbage.db"), std::ios::binary);
    for (int i = 0; i < 4096; ++i) garbage.put(static_cast<char>(i % 253));
  }
  const std::string before = slurp(file("garbage.db"));
  Result r = run(db("garbage.db") + " stats");
  EXPECT_EQ(r.code, 2);  // a damaged file the user named is bad input (core/error.hpp)
  EXPECT_THAT(r.err, HasSubstr("not an SQLite file"));
  r = run(db("garbage.db") + " import " + quote(cache_));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(slurp(file("garbage.db")), before);
  r = run(db("absent.db") + " stats");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("does not exist"));
  EXPECT_FALSE(std::filesystem::exists(file("absent.db")));
}

}  // namespace
