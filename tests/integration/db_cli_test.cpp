// atvoss-db as a user runs it: real processes on real files, checking output, exit codes
// (0 ok, 2 bad input, 1 failure) and that a refused command leaves the data as it was.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <vector>

#include "cli_harness.hpp"
#include "core/json.hpp"
#include "tests/db/pg_test_util.hpp"

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

// The same commands on a PostgreSQL database: migrate a file across and back, then stats,
// best, export-table, prune and check answer as they do on the file.
TEST_F(DbCliTest, MigrateToPostgresAndBackThenEveryCommandAnswersAsOnTheFile) {
  atvoss::db::testing::PgSchema schema;
  const std::string url = quote(schema.url());
  ASSERT_EQ(run(db() + " import " + quote(cache_)).code, 0);
  Result r = run("migrate --from " + quote(file("tune.db")) + " --to " + url);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("4092 added"));
  r = run("--db " + url + " --json stats");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto stats = atvoss::parse_json(r.out, "stats");
  EXPECT_EQ(stats["records"], 4092);
  EXPECT_EQ(stats["by_status"]["runtime_error"], 330);
  const std::string workload = quote(R"({"op":"recorded","table":")" + cache_ + R"("})");
  const std::string best = " --json best --workload " + workload + " --target " + gpu_ + " -k 3";
  r = run("--db " + url + best);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(atvoss::parse_json(r.out, "best"), atvoss::parse_json(run(db() + best).out, "best"));
  ASSERT_EQ(run("--db " + url + " export-table --target " + gpu_ + " -o " + quote(file("pg.json"))).code, 0);
  ASSERT_EQ(run(db() + " export-table --target " + gpu_ + " -o " + quote(file("file.json"))).code, 0);
  EXPECT_EQ(atvoss::load_json_file(file("pg.json"))["entries"], atvoss::load_json_file(file("file.json"))["entries"]);
  // And back into a new file: the same records.
  r = run("migrate --from " + url + " --to " + quote(file("back.db")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(atvoss::parse_json(run(db("back.db") + " --json stats").out, "stats")["records"], 4092);
  // Into a database that is not empty: bad input, nothing copied.
  r = run("migrate --from " + quote(file("tune.db")) + " --to " + url);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("not empty"));
  r = run("--db " + url + " --json prune -k 1");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("--db " + url + " check");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ok"));
}

TEST_F(DbCliTest, ABadDatabaseUrlExitsTwoAnUnreachableServerOne) {
  Result r = run("--db 'postgresql://h/db?no_such_parameter=1' stats");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("malformed"));
  r = run("--db 'postgresql://atvoss:sekrit@localhost/atvoss' stats");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("PGPASSFILE"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("sekrit")));
  r = run("--db 'postgresql://atvoss@/atvoss?host=/nonexistent-atvoss-dir&connect_timeout=2' stats");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot connect to database"));
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
        << R"("target":{"key":"k","name":"n","description":{}},"schedule":{"tile_m":1}})"
        << "\n";
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

// Imported records are validated like measured ones. Each tampered line comes second in
// its file, after a good one: the whole file is refused, naming the line, and nothing of
// it is written.
TEST_F(DbCliTest, ImportRefusesARecordNoMeasurementCouldProduceAndWritesNothing) {
  const std::string w = quote(R"({"op":"matmul","dims":{"M":256,"N":256,"K":256}})");
  Result r = run_tool("atvoss-tune", "--target ascend910 --workload " + w +
                                         " --trials 4 --strategy random --seed 1 --quiet " + db("src.db"));
  ASSERT_EQ(r.code, 0) << r.err;
  r = run(db("src.db") + " --json query --status ok --limit 2");
  ASSERT_EQ(r.code, 0) << r.err;
  const atvoss::Json rows = atvoss::parse_json(r.out, "query");
  ASSERT_EQ(rows.size(), 2u);
  std::vector<atvoss::Json> good;
  for (atvoss::Json row : rows) {
    row.erase("id");
    good.push_back(row);
  }
  const auto tampered = [&](const std::function<void(atvoss::Json&)>& edit) {
    atvoss::Json bad = good[1];
    edit(bad);
    return good[0].dump() + "\n" + bad.dump() + "\n";
  };
  const std::string knob = good[1]["schedule"].begin().key();
  const struct {
    const char* name;
    std::function<void(atvoss::Json&)> edit;
    const char* says;
  } cases[] = {
      {"negative time", [](atvoss::Json& j) { j["measurement"]["time_us"] = -5; }, "'time_us'"},
      {"time beside its repeats", [](atvoss::Json& j) { j["measurement"]["time_us"] = 1e9; }, "'time_us'"},
      {"zero repeat", [](atvoss::Json& j) { j["measurement"]["repeats"][0] = 0; }, "'repeats'"},
      {"knob value outside the space",
       [&](atvoss::Json& j) {
         j["schedule"][knob] = 999983;
         j.erase("schedule_key");
       },
       "not in the space"},
      {"knob the op does not have",
       [](atvoss::Json& j) {
         j["schedule"]["warp_count"] = 4;
         j.erase("schedule_key");
       },
       "not in the space"},
      {"target description edited under its key",
       [](atvoss::Json& j) { j["target"]["description"]["clock_ghz"] = 9.5; }, "do not match"},
      {"target this build cannot read", [](atvoss::Json& j) { j["target"]["description"]["warp_size"] = 32; },
       "'description'"},
      {"NPU op on a name-only target",
       [](atvoss::Json& j) {
         const atvoss::Json gpu{{"name", "gpu"}};
         j["target"] = {{"key", atvoss::stable_key(gpu)}, {"name", "gpu"}, {"description", gpu}};
       },
       "no hardware description"},
  };
  ASSERT_EQ(run(db() + " import " + quote(cache_)).code, 0);
  const std::string before = slurp(file("tune.db"));
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    file("bad.jsonl", tampered(c.edit));
    r = run(db() + " import " + quote(file("bad.jsonl")));
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_THAT(r.err, HasSubstr("bad.jsonl:2"));
    EXPECT_THAT(r.err, HasSubstr(c.says));
    EXPECT_EQ(slurp(file("tune.db")), before);
  }
  // The same two records untouched import fine.
  file("good.jsonl", good[0].dump() + "\n" + good[1].dump() + "\n");
  r = run(db() + " import " + quote(file("good.jsonl")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("2 added"));

  // `best` of a shape never tuned answers as /v1/best does: the nearest comparable workload.
  r = run(db("src.db") + " --json best --target ascend910 --workload " +
          quote(R"({"op":"matmul","dims":{"M":320,"N":256,"K":256}})"));
  ASSERT_EQ(r.code, 0) << r.err;
  const atvoss::Json nearest = atvoss::parse_json(r.out, "best");
  EXPECT_EQ(nearest.at("match"), "nearest");
  EXPECT_EQ(nearest.at("workload").at("dims").at("M"), 256);
}

// A recorded GPU record must name a configuration its table holds.
TEST_F(DbCliTest, ImportedRecordOfATableMustBeInTheTable) {
  ASSERT_EQ(run(db("src.db") + " import " + quote(cache_)).code, 0);
  Result r = run(db("src.db") + " --json query --status ok --limit 1");
  ASSERT_EQ(r.code, 0) << r.err;
  atvoss::Json row = atvoss::parse_json(r.out, "query")[0];
  row.erase("id");
  row.erase("schedule_key");
  const std::string knob = row["schedule"].begin().key();
  row["schedule"][knob] = 999983;
  file("bad.jsonl", row.dump() + "\n");
  r = run(db() + " import " + quote(file("bad.jsonl")));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.jsonl:1"));
  EXPECT_THAT(r.err, HasSubstr("not in the space"));
  EXPECT_THAT(r.err, HasSubstr(knob));
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
  EXPECT_EQ(r.code, 2);  // a path the user named
  EXPECT_THAT(r.err, HasSubstr("does not exist"));
  EXPECT_FALSE(std::filesystem::exists(file("absent.db")));
}

// Every path the user names: missing, or a directory, is exit 2 naming it; an output in a
// directory that does not exist is refused, and the directory is not created.
TEST_F(DbCliTest, MissingPathsAndDirectoriesExitTwoAndCreateNothing) {
  std::filesystem::create_directories(file("adir"));
  ASSERT_EQ(run(db() + " import " + quote(cache_)).code, 0);
  const struct {
    const char* name;
    std::string args, says;
  } cases[] = {
      {"import of a missing file", db() + " import " + quote(file("nope.jsonl")), "does not exist"},
      {"import of a directory", db() + " import " + quote(file("adir")), "is a directory"},
      {"missing file after a good one", db() + " import " + quote(cache_) + " " + quote(file("nope.json.gz")),
       "nope.json.gz"},
      {"merge of a directory", db() + " merge " + quote(file("adir")), "is a directory"},
      {"stats of a directory", db("adir") + " stats", "is a directory"},
      {"prune of a directory", db("adir") + " prune -k 1", "is a directory"},
      {"import into a missing directory", db("no/such/dir/t.db") + " import " + quote(cache_), "does not exist"},
      {"export into a missing directory", db() + " export -o " + quote(file("out/all.jsonl")),
       "'" + file("out") + "' does not exist"},
      {"export onto a directory", db() + " export -o " + quote(file("adir")), "is a directory"},
      {"table into a missing directory", db() + " export-table --target " + gpu_ + " -o " + quote(file("out/t.json")),
       "does not exist"},
      {"serve a missing database", db("absent.db") + " serve --port 0", "does not exist"},
      {"token file is a directory", db() + " serve --port 0 --token-file " + quote(file("adir")), "is a directory"},
      {"token file others can read", db() + " serve --port 0 --token-file " + quote(file("open.token")),
       "the token file is open to group and others (mode 644)"},
  };
  std::ofstream(file("open.token")) << "0123456789abcdef0123\n";
  ::chmod(file("open.token").c_str(), 0644);
  const std::string before = slurp(file("tune.db"));
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const Result r = run(c.args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says));
  }
  EXPECT_FALSE(std::filesystem::exists(file("out")));
  EXPECT_FALSE(std::filesystem::exists(file("no")));
  EXPECT_EQ(slurp(file("tune.db")), before);  // the good file before the missing one was not imported
  // Exports leave no temporary beside their destination.
  ASSERT_EQ(run(db() + " export -o " + quote(file("all.jsonl"))).code, 0);
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_))
    entries += e.path().filename().string().find(".tmp") != std::string::npos;
  EXPECT_EQ(entries, 0);
}

// VACUUM rewrites what it can read: on a file that fails check it would bury the damage.
TEST_F(DbCliTest, VacuumRefusesADatabaseThatFailsCheck) {
  ASSERT_EQ(run(db() + " import " + quote(cache_)).code, 0);
  ASSERT_EQ(run(db() + " vacuum").code, 0);  // also folds the WAL into the file
  {
    // Damage one page in the middle of the file (the records table's pages, past the header
    // and schema pages), wherever the file's size puts it.
    const auto pages = static_cast<std::int64_t>(std::filesystem::file_size(file("tune.db")) / 4096);
    ASSERT_GE(pages, 8) << "the imported cache should fill more than a few pages";
    std::fstream f(file("tune.db"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 * (pages / 2) + 100);
    for (int i = 0; i < 64; ++i) f.put(static_cast<char>(0xA5));
  }
  Result r = run(db() + " check");
  ASSERT_NE(r.code, 0) << "the damage was not seen by check: " << r.out;
  const std::string before = slurp(file("tune.db"));
  r = run(db() + " vacuum");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("fails check"));
  EXPECT_EQ(slurp(file("tune.db")), before);
}

}  // namespace
