// Log lines quote peers; a peer must not be able to forge a line or send terminal escapes.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "rpc/log.hpp"

namespace atvoss::rpc {
namespace {

TEST(Log, ControlBytesArePrintedEscaped) {
  EXPECT_EQ(printable("plain text"), "plain text");
  EXPECT_EQ(printable("a\nb\r\x1b[2J\x7f\\"), "a\\x0ab\\x0d\\x1b[2J\\x7f\\\\");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 is left alone
}

TEST(Log, APeersNewlineCannotStartAForgedLine) {
  char path[] = "/tmp/atvoss_log_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(fd, STDERR_FILENO);
  set_log_enabled(true);
  log_line("farm", "the first message must be a login, got 'x\n1.0 farm: worker admin registered'");
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path);
  const std::string out = text.str();
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_NE(out.find("got 'x\\x0a1.0 farm: worker admin registered'"), std::string::npos) << out;
}

}  // namespace
}  // namespace atvoss::rpc
