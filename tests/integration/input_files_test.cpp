// Inputs that hung or grew without end: a FIFO given as an input
// blocked every tool for good, and /dev/zero as a JSON argument grew RSS to 1.27 GB. Each tool,
// each input path: a FIFO, a device node and a symlink to a FIFO are bad input (exit 2) at
// once, naming the flag; the run is bounded by `timeout`, so a hang fails as exit 124.
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_harness.hpp"

namespace atvoss::cli_test {
namespace {

using ::testing::HasSubstr;

class InputFiles : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    fifo_ = file("input.fifo");
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
    link_ = file("link.json");
    std::filesystem::create_symlink(fifo_, link_);
  }
  // The tool under `timeout 20`: a hang is exit 124, not a stuck test.
  CliResult bounded(const std::string& tool, const std::string& args) const { return run_tool(tool, args, "", 20); }
  std::string fifo_, link_;
};

TEST_F(InputFiles, EveryToolRefusesAFifoADeviceAndASymlinkToAFifo) {
  const std::string workload = R"('{"op":"matmul","dims":{"M":64,"N":64,"K":64}}')";
  struct Case {
    std::string tool, args;  // INPUT stands for the path under test
  };
  const std::vector<Case> cases = {
      {"atvoss-sim", "eval --target ascend910 --workload INPUT"},
      {"atvoss-sim", "eval --target INPUT --workload " + workload},
      {"atvoss-tune", "INPUT --quiet"},
      {"atvoss-tune", "--target ascend910 --workload INPUT --trials 1 --db " + file("t.db")},
      {"atvoss-db", "--db INPUT stats"},
      {"atvoss-db", "--db " + file("d.db") + " import INPUT"},
      {"atvoss-analyze", "--job INPUT"},
      {"atvoss-kernel-runner", "--so INPUT --workload " + workload},
  };
  for (const Case& c : cases) {
    for (const std::string& input : {fifo_, std::string("/dev/zero"), link_}) {
      std::string args = c.args;
      args.replace(args.find("INPUT"), 5, quote(input));
      SCOPED_TRACE(c.tool + " " + args);
      const CliResult r = bounded(c.tool, args);
      EXPECT_EQ(r.code, 2) << r.err;  // 124: it hung
      EXPECT_THAT(r.err, HasSubstr("expected a regular file"));
    }
  }
}

// Wrong exit codes: negative counts and seeds ran (a sweep with
// --limit -1 ran whole; an unsigned seed of -1 became 2^64-1), so did numbers past 2^64,
// prune and vacuum created the database they were to work on, a host-backend worker
// started for an NPU target, and the kernel runner called a bad --so a failure (exit 1).
TEST_F(InputFiles, NegativeNumbersMissingDatabasesAndAMismatchedWorkerAreBadInput) {
  const std::string workload = R"('{"op":"matmul","dims":{"M":64,"N":64,"K":64}}')";
  const std::string db = file("absent.db");
  const struct {
    std::string tool, args, says;
  } cases[] = {
      {"atvoss-sim", "sweep --target ascend910 --workload " + workload + " --limit -1",
       "--limit: must be >= 0, got -1"},
      {"atvoss-sim", "eval --target ascend910 --workload " + workload + " --seed -1", "--seed: must be >= 0, got -1"},
      {"atvoss-tune", "--target ascend910 --workload " + workload + " --trials 1 --db " + file("t.db") + " --seed -1",
       "--seed: must be >= 0"},
      {"atvoss-db", "--db " + db + " query --limit -5", "--limit: must be >= 0, got -5"},
      {"atvoss-db", "--db " + db + " vacuum", "does not exist"},
      {"atvoss-db", "--db " + db + " prune -k 1", "does not exist"},
      {"atvoss-worker", "--farm 127.0.0.1:1 --backend host --target ascend910 --quiet",
       "--backend host: serves none of the targets (ascend910); it serves this CPU's target (--target host)"},
      // Past 2^64: CLI11 saturated these without a word.
      {"atvoss-sim", "sweep --target ascend910 --workload " + workload + " --limit 99999999999999999999999",
       "--limit: must be at most 18446744073709551615"},
      {"atvoss-sim", "eval --target ascend910 --workload " + workload + " --seed 18446744073709551616",
       "--seed: must be at most 18446744073709551615"},
      {"atvoss-tune",
       "--target ascend910 --workload " + workload + " --trials 1 --db " + file("t.db") +
           " --seed 18446744073709551616",
       "--seed: must be at most"},
      {"atvoss-db", "--db " + db + " query --limit 9223372036854775808",
       "--limit: must be at most 9223372036854775807"},
      {"atvoss-model", "train --db " + db + " --target ascend910 --seed 18446744073709551616",
       "--seed: must be at most"},
      {"atvoss-kernel-runner", "--so " + file("k.so") + " --workload " + workload + " --seed 18446744073709551616",
       "--seed: must be at most"},
      {"atvoss-tune", "--target ascend910 --workload " + workload + " --trials 99999999999999 --db " + file("t.db"),
       "--trials"},
      // Once unchecked: atvoss-plan ran with these seeds (exit 0), and a worker
      // started with --noise nan and then failed every task (CLI::Range lets NaN through).
      {"atvoss-plan", "--model mlp --seed -1", "--seed: must be >= 0, got -1"},
      {"atvoss-plan", "--model mlp --seed 1e23", "--seed: must be a whole number in digits, got 1e23"},
      {"atvoss-plan", "--model mlp --seed 18446744073709551616", "--seed: must be at most 18446744073709551615"},
      {"atvoss-worker", "--farm 127.0.0.1:1 --target ascend910 --quiet --noise nan",
       "--noise: must be a number in [0, 1], got nan"},
      {"atvoss-sim", "eval --target ascend910 --workload " + workload + " --noise nan", "--noise: must be a number in"},
      {"atvoss-sim", "eval --target ascend910 --workload " + workload + " --seed 1e3", "whole number in digits"},
      // Messages that named the wrong thing.
      {"atvoss-model", "frobnicate", "unknown subcommand 'frobnicate'; expected one of: train, eval, inspect"},
      {"atvoss-db", "--db " + db + " frobnicate", "unknown subcommand 'frobnicate'; expected one of: stats,"},
      {"atvoss-db", "--db " + db + " serve --host nothost", "--host: expected an IP address"},
      {"atvoss-farm", "--http-host nothost", "--http-host: expected an IP address"},
      {"atvoss-tune", file("absent-job.json") + " --quiet", "job spec: '"},
      // A recorded-table directory anyone may write to: anyone could plant the tables.
      {"atvoss-worker", "--farm 127.0.0.1:1 --target ascend910 --recorded-dir " + file("open-tables") + " --quiet",
       "is writable by others (mode 777)"},
      // A file that is no kernel object is the caller's bad input, not a failure (exit 1).
      {"atvoss-kernel-runner", "--so " + file("not-a-kernel.so") + " --workload " + workload,
       "--so: not a loadable kernel object"},
  };
  std::ofstream(file("not-a-kernel.so")) << "garbage";
  std::filesystem::create_directory(file("open-tables"));
  ::chmod(file("open-tables").c_str(), 0777);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.tool + " " + c.args);
    const CliResult r = bounded(c.tool, c.args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says));
  }
  EXPECT_FALSE(std::filesystem::exists(db));
}

// A compile cache open to group or others: every measurement failed on it, and the run
// ended "3 rounds in a row measured nothing" (exit 1) after opening its database. Now the
// host backend's own check refuses it first: exit 2, naming the directory, no database.
TEST_F(InputFiles, ACompileCacheOpenToOthersIsBadInputBeforeTuning) {
  const std::string cache = file("open-cache");
  std::filesystem::create_directories(cache + "/atvoss");
  ASSERT_EQ(::chmod((cache + "/atvoss").c_str(), 0775), 0);
  const char* before = std::getenv("XDG_CACHE_HOME");
  const std::string saved = before ? before : "";
  ::setenv("XDG_CACHE_HOME", cache.c_str(), 1);  // inherited by the tool
  const CliResult r = bounded("atvoss-tune", R"(--target host --workload '{"op":"matmul","dtype":"float32",)"
                                             R"("dims":{"M":32,"N":32,"K":32}}' --trials 2 --quiet --db )" +
                                                 file("open-cache.db"));
  if (before) {
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_CACHE_HOME");
  }
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("compile cache '" + cache + "/atvoss' is writable by group or others (mode 775)"));
  EXPECT_FALSE(std::filesystem::exists(file("open-cache.db")));
}

// A token file others could read was accepted by the farm, the worker and serve (atvoss-db
// serve: db_cli_test.cpp). Refused as ssh refuses a key, naming who has access; the token
// itself is never printed.
TEST_F(InputFiles, TokenFilesGroupOrOthersMayReadAreRefusedSayingWho) {
  const std::string token = file("farm.token");
  std::ofstream(token) << "0123456789abcdef-secret\n";
  for (const auto& [mode, who] : {std::pair{0644, "group and others (mode 644)"}, std::pair{0640, "group (mode 640)"},
                                  std::pair{0604, "others (mode 604)"}, std::pair{0620, "group (mode 620)"}}) {
    ASSERT_EQ(::chmod(token.c_str(), static_cast<mode_t>(mode)), 0);
    for (const std::string& cmd : {std::string("atvoss-farm --port 0 --quiet"),
                                   std::string("atvoss-worker --farm 127.0.0.1:1 --target ascend910 --quiet")}) {
      SCOPED_TRACE(cmd + " " + who);
      const std::string tool = cmd.substr(0, cmd.find(' '));
      const CliResult r = bounded(tool, cmd.substr(cmd.find(' ') + 1) + " --token-file " + quote(token));
      EXPECT_EQ(r.code, 2) << r.err;
      EXPECT_THAT(r.err, HasSubstr("--token-file " + token + ": the token file is open to " + who));
      EXPECT_THAT(r.err, HasSubstr("chmod 600"));
      EXPECT_THAT(r.err, ::testing::Not(HasSubstr("secret")));
    }
  }
}

}  // namespace
}  // namespace atvoss::cli_test
