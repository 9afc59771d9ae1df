// Shared fixture of the CLI integration tests (atvoss-sim, atvoss-analyze, atvoss-db,
// atvoss-model): runs a real program from ATVOSS_BIN_DIR through the shell, as a user would,
// with its stdin, stdout and stderr in files of a scratch directory removed after the test.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace atvoss::cli_test {

struct CliResult {
  int code = -1;  // exit status; -1 if the program did not exit normally
  std::string out, err;
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("atvoss-cli-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Path of a scratch file; writes content into it when content is not empty.
  std::string file(const std::string& name, const std::string& content = "") const {
    const auto path = (dir_ / name).string();
    if (!content.empty()) std::ofstream(path) << content;
    return path;
  }

  // Single-quotes s for the shell.
  static std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  }

  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  // Runs ATVOSS_BIN_DIR/tool with args (already shell-quoted where needed); with timeout_s,
  // under timeout(1), so that a hang ends as exit 124.
  CliResult run_tool(const std::string& tool, const std::string& args, const std::string& stdin_text = "",
                     int timeout_s = 0) const {
    const std::string in = file("stdin", stdin_text.empty() ? "\n" : stdin_text);
    const std::string out = file("stdout"), err = file("stderr");
    const std::string bound = timeout_s > 0 ? "timeout " + std::to_string(timeout_s) + " " : "";
    const std::string cmd =
        bound + std::string(ATVOSS_BIN_DIR) + "/" + tool + " " + args + " <" + in + " >" + out + " 2>" + err;
    const int status = std::system(cmd.c_str());
    CliResult r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  std::filesystem::path dir_;
};

}  // namespace atvoss::cli_test
