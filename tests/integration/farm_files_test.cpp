// What a worker will open: a farm client names a recorded table's
// path, and a default worker opened it and returned its first line in the error (/etc/passwd),
// or blocked its slots for good on a FIFO. A real atvoss-worker, a scripted farm on loopback.
#include <sys/stat.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/recorded_space.hpp"
#include "farm_harness.hpp"

namespace atvoss::farm_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

Json table(const std::string& path) { return Json{{"op", "recorded"}, {"table", path}}; }

// A valid schedule of the recorded table at path.
Json a_schedule(const std::string& path) {
  const auto space = RecordedSpace::load(path);
  std::mt19937_64 rng(1);
  return space->space().schedule_at(*space->space().random_valid_point(rng)).to_json();
}

TEST(FarmFiles, ADefaultWorkerOpensNoTableAndEchoesNothing) {
  ScriptedFarm farm;
  Child worker = start_worker(farm.port(), 1);
  const std::string target = farm.login_worker().at("targets").at(0);
  const Measurement m = farm.measure(1, target, table("/etc/passwd"), Json::object());
  EXPECT_EQ(m.status, Status::error);
  EXPECT_THAT(m.message, HasSubstr("start it with --recorded-dir"));
  EXPECT_THAT(m.message, Not(HasSubstr("root:")));
}

TEST(FarmFiles, OnlyRegularFilesInsideTheRecordedDirAreServed) {
  TempDir dir;
  const fs::path allowed = fs::path(dir.file("tables"));
  fs::create_directories(allowed);
  const std::string source = std::string(ATVOSS_DATA_DIR) + "/recorded-spaces/gemm-RTX_3090.json.gz";
  const std::string inside = (allowed / "gemm-RTX_3090.json.gz").string();
  fs::copy_file(source, inside);
  const std::string outside = dir.file("gemm-RTX_3090.json.gz");
  fs::copy_file(source, outside);
  fs::create_symlink(outside, allowed / "escape.json.gz");
  const std::string fifo = (allowed / "blocks.json.gz").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // As root (CI): the directory and what is planted in it belong to another user, nobody,
  // and the symlink points at a file only root may read.
  const std::string secret = dir.file("secret");
  std::ofstream(secret) << "root-only line\n";
  ::chmod(secret.c_str(), 0600);
  fs::create_symlink(secret, allowed / "secret.json.gz");
  if (::geteuid() == 0) {
    for (const auto& entry : fs::directory_iterator(allowed)) {
      ASSERT_EQ(::lchown(entry.path().c_str(), 65534, 65534), 0);
    }
    ASSERT_EQ(::chown(allowed.c_str(), 65534, 65534), 0);
  }

  ScriptedFarm farm;
  Child worker = start_worker(farm.port(), 1, {"--recorded-dir", allowed.string()});
  const std::string target = farm.login_worker().at("targets").at(0);
  const Json schedule = a_schedule(inside);
  const Measurement ok = farm.measure(1, target, table(inside), schedule);
  EXPECT_TRUE(ok.ok()) << ok.message;
  EXPECT_GT(ok.time_us, 0);
  for (const auto& [id, path, why] :
       {std::tuple{2, outside, "outside its --recorded-dir"},
        std::tuple{3, (allowed / "escape.json.gz").string(), "outside its --recorded-dir"},
        std::tuple{4, fifo, "not a regular file"},
        std::tuple{7, (allowed / "secret.json.gz").string(), "outside its --recorded-dir"},
        std::tuple{5, (allowed / "../tables/../../etc/passwd").string(), "not a regular file"}}) {
    SCOPED_TRACE(path);
    const Measurement m = farm.measure(id, target, table(path), schedule);  // returns: no hang on the FIFO
    EXPECT_EQ(m.status, Status::error);
    EXPECT_THAT(m.message, HasSubstr(why));
    EXPECT_THAT(m.message, Not(HasSubstr("root-only")));
  }
  // The slot is free after all of them: the served table still measures.
  EXPECT_TRUE(farm.measure(6, target, table(inside), schedule).ok());
}

}  // namespace
}  // namespace atvoss::farm_test
