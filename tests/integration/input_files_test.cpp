// Inputs that hung or grew without end: a FIFO given as an input
// blocked every tool for good, and /dev/zero as a JSON argument grew RSS to 1.27 GB. Each tool,
// each input path: a FIFO, a device node and a symlink to a FIFO are bad input (exit 2) at
// once, naming the flag; the run is bounded by `timeout`, so a hang fails as exit 124.
#include <sys/stat.h>

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

}  // namespace
}  // namespace atvoss::cli_test
