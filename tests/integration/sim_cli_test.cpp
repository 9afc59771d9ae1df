// atvoss-sim and atvoss-analyze as a user runs them: real processes, checking
// output and exit codes (0 ok, 2 bad input, 1 failure) for good and bad input.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_harness.hpp"

#include "core/json.hpp"

namespace {

using ::testing::HasSubstr;

const char* kMatmul = R"({"op":"matmul","dims":{"M":256,"N":256,"K":256}})";
const char* kGood =
    R"({"tile_m":64,"tile_n":64,"tile_k":64,"k_steps":2,"async_copy_depth":2,"tile_order":0,"fusion_level":0})";

using Result = atvoss::cli_test::CliResult;

class SimCliTest : public atvoss::cli_test::CliTest {
 protected:
  Result run(const std::string& tool, const std::string& args, const std::string& stdin_text = "") const {
    return run_tool(tool, args, stdin_text);
  }

  static std::vector<atvoss::Json> lines(const std::string& text) {
    std::vector<atvoss::Json> v;
    std::istringstream in(text);
    std::string l;
    while (std::getline(in, l)) v.push_back(atvoss::Json::parse(l));
    return v;
  }
};

TEST_F(SimCliTest, SpaceListsKnobsSizeAndValidPoints) {
  const Result r = run("atvoss-sim", "space --target ascend910 --json --workload " + quote(kMatmul));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = atvoss::Json::parse(r.out);
  EXPECT_EQ(j["knobs"].size(), 7u);
  EXPECT_GT(j["valid"].get<std::uint64_t>(), 0u);
  EXPECT_LE(j["valid"].get<std::uint64_t>(), j["size"].get<std::uint64_t>());
}

TEST_F(SimCliTest, EvalAnswersEveryLineInOrder) {
  std::string invalid = kGood;
  invalid.replace(invalid.find("\"async_copy_depth\":2"), 20, "\"async_copy_depth\":4");
  invalid.replace(invalid.find("\"tile_m\":64"), 11, "\"tile_m\":256");
  invalid.replace(invalid.find("\"tile_k\":64"), 11, "\"tile_k\":256");
  const Result r = run("atvoss-sim", "eval --target ascend910b --noise 0 --workload " + quote(kMatmul),
                       std::string(kGood) + "\n" + invalid + "\n" + kGood + "\n");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0]["status"], "ok");
  EXPECT_EQ(out[1]["status"], "invalid");
  EXPECT_THAT(out[1]["message"].get<std::string>(), HasSubstr("L0A"));
  EXPECT_EQ(out[0]["time_us"], out[2]["time_us"]);  // noise 0: exact
}

TEST_F(SimCliTest, EvalNoiseIsSeeded) {
  const std::string input = std::string(kGood) + "\n";
  const std::string args = "eval --target ascend910b --repeat 3 --workload " + quote(kMatmul);
  const Result a = run("atvoss-sim", args + " --seed 5", input);
  const Result b = run("atvoss-sim", args + " --seed 5", input);
  const Result c = run("atvoss-sim", args + " --seed 6", input);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  EXPECT_EQ(lines(a.out)[0]["repeats"].size(), 3u);
}

TEST_F(SimCliTest, EvalBadLinesGetErrorResultsAndExit2) {
  const std::string input = std::string(kGood) + "\n" + "{not json\n" + R"({"tile_m":64})" + "\n" +
                            std::string(kGood).insert(1, R"("unroll":4,)") + "\n" +
                            std::string(kGood).replace(std::string(kGood).find("64"), 2, "17") + "\n" + kGood + "\n";
  const Result r = run("atvoss-sim", "eval --target ascend910b --workload " + quote(kMatmul), input);
  EXPECT_EQ(r.code, 2);
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0]["status"], "ok");
  EXPECT_EQ(out[5]["status"], "ok");
  EXPECT_THAT(out[1]["message"].get<std::string>(), HasSubstr("line 2: schedule: invalid JSON"));
  EXPECT_THAT(out[2]["message"].get<std::string>(), HasSubstr("missing knob"));
  EXPECT_THAT(out[3]["message"].get<std::string>(), HasSubstr("unknown knob 'unroll'"));
  EXPECT_THAT(out[4]["message"].get<std::string>(), HasSubstr("outside the space"));
  for (int i = 1; i <= 4; ++i) EXPECT_EQ(out[i]["status"], "error");
}

// A line that is not UTF-8 is a bad line like any other: an error result in its place,
// exit 2 at the end, and the lines after it are still evaluated.
TEST_F(SimCliTest, EvalInvalidUtf8LineGetsAnErrorAndTheRunGoesOn) {
  const std::string input = std::string(kGood) + "\n" + "{\"tile_m\xff\xfe\":64}\n" + "\xc3\x28\x80\n" +
                            std::string(kGood).insert(1, "\"\xed\xa0\x80\":1,") + "\n" + kGood + "\n";
  const Result r = run("atvoss-sim", "eval --target ascend910b --workload " + quote(kMatmul), input);
  EXPECT_EQ(r.code, 2) << r.err;
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), 5u) << r.out << r.err;
  EXPECT_EQ(out[0]["status"], "ok");
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(out[i]["status"], "error");
    EXPECT_THAT(out[i]["message"].get<std::string>(), HasSubstr("line " + std::to_string(i + 1) + ":"));
  }
  EXPECT_EQ(out[4]["status"], "ok");
}

TEST_F(SimCliTest, SweepWritesCsvOfValidPoints) {
  const std::string csv = (dir_ / "sweep.csv").string();
  const Result r =
      run("atvoss-sim", "sweep --target ascend910 --limit 50 --seed 3 --csv " + csv + " --workload " + quote(kMatmul));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("50 valid points measured"));
  std::istringstream in(slurp(csv));
  std::string header, row;
  std::getline(in, header);
  EXPECT_EQ(header, "tile_m,tile_n,tile_k,k_steps,async_copy_depth,tile_order,fusion_level,time_us,status");
  int rows = 0;
  while (std::getline(in, row)) {
    ++rows;
    EXPECT_THAT(row, ::testing::EndsWith(",ok"));
  }
  EXPECT_EQ(rows, 50);
}

// --csv wrote through a symlink, into a device node, and blocked on a FIFO; it is checked
// as every other output is (core/atomic_file.hpp): refused before the sweep, nothing touched.
TEST_F(SimCliTest, SweepCsvRefusesASymlinkADeviceAndAFifo) {
  const std::string victim = (dir_ / "victim.txt").string();
  std::ofstream(victim) << "keep me\n";
  const std::string link = (dir_ / "link.csv").string(), fifo = (dir_ / "out.fifo").string();
  std::filesystem::create_symlink(victim, link);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [csv, is] :
       {std::pair{link, "is a symbolic link"}, std::pair{std::string("/dev/null"), "is a device node"},
        std::pair{fifo, "is a FIFO"}}) {
    SCOPED_TRACE(csv);
    const Result r = run_tool("atvoss-sim", "sweep --limit 2 --workload " + quote(kMatmul) + " --csv " + quote(csv), "",
                              20);  // under timeout: a FIFO once blocked it for good (124)
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("--csv: '" + csv + "' " + is));
    EXPECT_THAT(r.err, HasSubstr("only a regular file is replaced"));
  }
  EXPECT_EQ(slurp(victim), "keep me\n");
  EXPECT_TRUE(std::filesystem::is_symlink(link));
}

TEST_F(SimCliTest, AnalyzeNamesBottleneckAndHint) {
  const Result one =
      run("atvoss-analyze", "--target ascend910 --workload " + quote(kMatmul) + " --schedule " + quote(kGood));
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_THAT(one.out, HasSubstr("bottleneck: "));
  EXPECT_THAT(one.out, HasSubstr("hint: "));
  EXPECT_THAT(one.out, HasSubstr("L1 hit rate"));
  const std::string conv =
      R"({"op":"conv2d","dims":{"N":1,"C":64,"H":56,"W":56,"K":64,"R":3,"S":3,"pad":1},"epilogue":["batchnorm","relu"]})";
  const Result many =
      run("atvoss-analyze", "--target ascend910 --workload " + quote(kMatmul) + " --workload " + quote(conv));
  ASSERT_EQ(many.code, 0) << many.err;
  EXPECT_THAT(many.out, HasSubstr("% of total"));
  EXPECT_THAT(many.out, HasSubstr("1. "));
  EXPECT_THAT(many.out, HasSubstr("2. "));
}

TEST_F(SimCliTest, BadInputExits2WithAMessage) {
  const std::string target_missing = file("target_missing.json", R"({"name":"x","organisation":"coupled"})");
  const std::string target_typed = file("target_typed.json", R"({"preset":"ascend910","ai_cores":"lots"})");
  const struct {
    const char* name;
    std::string tool, args, expect;
  } cases[] = {
      {"malformed workload", "atvoss-sim", "space --workload '{\"op\":'", "invalid JSON"},
      {"unknown op", "atvoss-sim", "space --workload '{\"op\":\"fft\",\"dims\":{}}'", "unknown op 'fft'"},
      {"zero dim", "atvoss-sim", R"(space --workload '{"op":"matmul","dims":{"M":0,"N":8,"K":8}}')", "'M' must be > 0"},
      {"negative dim", "atvoss-sim", R"(space --workload '{"op":"softmax","dims":{"M":-3,"N":8}}')", "'M' must be > 0"},
      {"unknown preset", "atvoss-sim", std::string("space --target ascend000 --workload ") + quote(kMatmul),
       "unknown preset"},
      {"target missing field", "atvoss-sim", "space --target " + target_missing + " --workload " + quote(kMatmul),
       "field"},
      {"target mistyped field", "atvoss-sim", "space --target " + target_typed + " --workload " + quote(kMatmul),
       "ai_cores"},
      {"missing workload flag", "atvoss-sim", "space --target ascend910", "workload"},
      {"bad noise", "atvoss-sim", "eval --noise -1 --workload " + quote(kMatmul), "noise"},
      {"analyze bad schedule", "atvoss-analyze", "--workload " + quote(kMatmul) + " --schedule '{\"tile_m\":64}'",
       "missing knob"},
      {"analyze malformed", "atvoss-analyze", "--workload '[1,'", "invalid JSON"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const Result r = run(c.tool, c.args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.expect));
  }
}

// Every path the user names, in atvoss-sim, atvoss-analyze, atvoss-tune and atvoss-model:
// missing or a directory is exit 2 naming it, and no directory is created for an output.
TEST_F(SimCliTest, MissingPathsAndDirectoriesExitTwoAndCreateNothing) {
  std::filesystem::create_directories(dir_ / "adir");
  const std::string adir = quote((dir_ / "adir").string());
  const std::string nope = quote((dir_ / "nope.json").string());
  const std::string job = file("job.json", R"({"name":"j","target":"ascend910","model":"mlp","trials":4,)"
                                           R"("database":")" +
                                               (dir_ / "out" / "j.db").string() + R"("})");
  const struct {
    const char* name;
    std::string tool, args, says;
  } cases[] = {
      {"workload file missing", "atvoss-sim", "space --workload " + nope, "does not exist"},
      {"workload is a directory", "atvoss-sim", "space --workload " + adir, "is a directory"},
      {"target is a directory", "atvoss-sim", "space --target " + adir + " --workload " + quote(kMatmul),
       "is a directory"},
      {"csv into a missing directory", "atvoss-sim",
       "sweep --limit 2 --workload " + quote(kMatmul) + " --csv " + quote((dir_ / "out" / "s.csv").string()),
       "does not exist"},
      {"analyze workload is a directory", "atvoss-analyze", "--workload " + adir, "is a directory"},
      {"job file missing", "atvoss-tune", nope, "does not exist"},
      {"job file is a directory", "atvoss-tune", adir, "is a directory"},
      {"job database in a missing directory", "atvoss-tune", quote(job), "field 'database'"},
      {"tune db in a missing directory", "atvoss-tune",
       "--target ascend910 --workload " + quote(kMatmul) + " --trials 4 --quiet --db " +
           quote((dir_ / "out" / "t.db").string()),
       "does not exist"},
      {"tune db is a directory", "atvoss-tune",
       "--target ascend910 --workload " + quote(kMatmul) + " --trials 4 --quiet --db " + adir, "is a directory"},
      {"tune export into a missing directory", "atvoss-tune",
       "--target ascend910 --workload " + quote(kMatmul) + " --trials 4 --quiet --db " +
           quote((dir_ / "t.db").string()) + " --export " + quote((dir_ / "out" / "t.json").string()),
       "does not exist"},
      {"model db missing", "atvoss-model", "inspect --db " + nope + " --target ascend910", "does not exist"},
      {"model db is a directory", "atvoss-model", "train --db " + adir + " --target ascend910", "is a directory"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const Result r = run(c.tool, c.args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says));
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "t.db"));  // validated before the database is created
}

// Target numbers that overflow or are absurd: exit 2 naming the field, from a file and inline,
// in atvoss-sim and in atvoss-tune (which must not create its database either).
TEST_F(SimCliTest, AbsurdTargetNumbersExit2NamingTheField) {
  const struct {
    const char* name;
    std::string text, field;
  } cases[] = {
      {"clock beyond double", R"({"preset":"ascend910","clock_ghz":1e400})", "clock_ghz"},
      {"absurd clock", R"({"preset":"ascend910","clock_ghz":1e30})", "'clock_ghz' must be > 0 and <= 100"},
      {"cores beyond int", R"({"preset":"ascend910","ai_cores":2147483648})",
       "'ai_cores' must be an integer in 1..4096"},
      {"negative buffer", R"({"preset":"ascend910","ub_bytes":-262144})", "'ub_bytes'"},
      {"NaN as text", R"({"preset":"ascend910","hbm_bytes_per_cycle":"NaN"})",
       "'hbm_bytes_per_cycle' must be a number"},
      {"NaN as token", R"({"preset":"ascend910","launch_us":NaN})", "invalid JSON"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string target = file("target.json", c.text);
    Result r = run("atvoss-sim", "space --target " + quote(target) + " --workload " + quote(kMatmul));
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.field));
    r = run("atvoss-sim", "space --target " + quote(c.text) + " --workload " + quote(kMatmul));
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.field));
    const std::string db = (dir_ / "tune.db").string();
    r = run("atvoss-tune",
            "--target " + quote(target) + " --workload " + quote(kMatmul) + " --trials 4 --quiet --db " + quote(db));
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.field));
    EXPECT_FALSE(std::filesystem::exists(db));
  }
}

}  // namespace
