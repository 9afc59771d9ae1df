// User-named paths (core/user_paths.hpp) and the atomic write (core/atomic_file.hpp): a
// missing file or directory is bad input naming it, nothing creates a directory, and a
// replaced file is whole, never half-written, with no temporary left behind.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/user_paths.hpp"

namespace atvoss {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class FilePathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("atvoss-paths-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_ / "adir");
    std::ofstream(dir_ / "old.txt") << "old";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  int entries() const {
    return static_cast<int>(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
  }
  static std::string refusal(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input()) << e.what();
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(FilePathsTest, InputMustBeAnExistingFile) {
  EXPECT_EQ(refusal([&] { require_input_file(path("old.txt"), "--x"); }), "");
  EXPECT_THAT(refusal([&] { require_input_file(path("nope"), "--x"); }),
              HasSubstr("--x: '" + path("nope") + "' does not exist"));
  EXPECT_THAT(refusal([&] { require_input_file(path("adir"), "--x"); }), HasSubstr("is a directory"));
}

TEST_F(FilePathsTest, OutputNeedsItsDirectoryAndCreatesNone) {
  EXPECT_EQ(refusal([&] { require_output_file(path("new.txt"), "-o"); }), "");
  EXPECT_THAT(refusal([&] { require_output_file(path("no/such/f.txt"), "-o"); }),
              HasSubstr("the directory '" + path("no/such") + "' does not exist"));
  EXPECT_THAT(refusal([&] { require_output_file(path("adir"), "-o"); }), HasSubstr("is a directory"));
  EXPECT_THAT(refusal([&] { require_output_file(path("old.txt/f"), "-o"); }), HasSubstr("is not a directory"));
  EXPECT_FALSE(fs::exists(path("no")));
}

TEST_F(FilePathsTest, AtomicWriteReplacesWholeAndLeavesNoTemporary) {
  write_file_atomically(path("old.txt"), "test", [](std::ostream& out) { out << "new content"; });
  EXPECT_EQ(slurp(path("old.txt")), "new content");
  EXPECT_EQ(entries(), 2);  // adir and old.txt: no temporary beside them
  // The umask decides the mode, as for any file the user writes (not mkstemp's 0600).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  ASSERT_EQ(::stat(path("old.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST_F(FilePathsTest, AFailedWriteKeepsTheOldFileAndLeavesNoTemporary) {
  EXPECT_THROW(write_file_atomically(path("old.txt"), "test",
                                     [](std::ostream& out) {
                                       out << "half";
                                       throw std::runtime_error("writer failed");
                                     }),
               std::runtime_error);
  EXPECT_EQ(slurp(path("old.txt")), "old");
  EXPECT_EQ(entries(), 2);
  EXPECT_THAT(refusal([&] { write_file_atomically(path("out/t.json"), "export", [](std::ostream&) {}); }),
              HasSubstr("does not exist"));
  EXPECT_THAT(refusal([&] { write_file_atomically(path("adir"), "export", [](std::ostream&) {}); }),
              HasSubstr("is a directory"));
  EXPECT_FALSE(fs::exists(path("out")));
  EXPECT_EQ(entries(), 2);
}

// export, export-table, tune --export, the job's "export" and farm --port-file replaced
// /dev/full or the /proc/self/fd/1 symlink with a regular file and reported success.
TEST_F(FilePathsTest, OnlyARegularFileIsReplaced) {
  std::ofstream(path("target.txt")) << "keep";
  fs::create_symlink(path("target.txt"), path("link"));
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  EXPECT_THAT(refusal([&] { write_file_atomically(path("link"), "--export", [](std::ostream& o) { o << "x"; }); }),
              HasSubstr("--export: '" + path("link") + "' is a symbolic link; only a regular file is replaced"));
  EXPECT_TRUE(fs::is_symlink(path("link")));
  EXPECT_EQ(slurp(path("target.txt")), "keep");
  EXPECT_THAT(refusal([&] { write_file_atomically(path("fifo"), "-o", [](std::ostream& o) { o << "x"; }); }),
              HasSubstr("is a FIFO"));
  EXPECT_EQ(fs::symlink_status(path("fifo")).type(), fs::file_type::fifo);
  EXPECT_THAT(refusal([&] { require_replaceable_file("/dev/null", "--port-file"); }), HasSubstr("is a device node"));
  EXPECT_EQ(refusal([&] { require_replaceable_file(path("old.txt"), "-o"); }), "");
  EXPECT_EQ(refusal([&] { require_replaceable_file(path("new.txt"), "-o"); }), "");
  testing::internal::CaptureStdout();
  write_file_atomically("-", "-o", [](std::ostream& o) { o << "to stdout"; });
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "to stdout");
  EXPECT_FALSE(fs::exists(path("-")));
}

}  // namespace
}  // namespace atvoss
