// Single-workload mode: the same ranges as the job spec, every input checked before the
// database is opened, and a run that stores what it measured.
#include "tuner/single_tune.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.hpp"
#include "former_host_records.hpp"

namespace atvoss::tuner {
namespace {

SingleTuneSpec spec_in(const std::filesystem::path& db) {
  SingleTuneSpec s;
  s.target = "ascend910b";
  s.workload = parse_json(R"({"op":"matmul","dims":{"M":256,"N":256,"K":256}})", "w");
  s.trials = 8;
  s.batch_size = 4;
  s.db = db.string();
  return s;
}

std::filesystem::path temp_db(const char* name) {
  return std::filesystem::temp_directory_path() /
         (std::string(name) + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".db");
}

TEST(SingleTuneTest, OutOfRangeNumbersAreRefusedBeforeTheDatabaseExists) {
  const auto db = temp_db("atvoss_single_bad_");
  for (auto set : std::vector<void (*)(SingleTuneSpec&)>{
           [](SingleTuneSpec& s) { s.repeat = 2'000'000'000; }, [](SingleTuneSpec& s) { s.early_stopping = -5; },
           [](SingleTuneSpec& s) { s.batch_size = 0; }, [](SingleTuneSpec& s) { s.trials = 0; },
           [](SingleTuneSpec& s) { s.target = "no-such-chip"; }}) {
    SingleTuneSpec s = spec_in(db);
    set(s);
    try {
      tune_single(s);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input()) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(db));
  }
}

TEST(SingleTuneTest, TunesAndStoresTheTrials) {
  const auto db = temp_db("atvoss_single_ok_");
  const SingleTuneOutcome out = tune_single(spec_in(db));
  EXPECT_EQ(out.result.trials, 8);
  EXPECT_TRUE(out.result.best_schedule.has_value());
  EXPECT_TRUE(std::filesystem::exists(db));
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);
}

// A host database from before the fingerprint named the CPU's family and caches: its records,
// stored under this machine's legacy name, are adopted, so the tune resumes them instead of
// compiling and measuring again.
TEST(SingleTuneTest, AHostTuneResumesTheRecordsOfThisMachinesFormerName) {
  const auto path = temp_db("atvoss_single_former_");
  SingleTuneSpec s = spec_in(path);
  s.target = "host";
  s.workload = parse_json(R"({"op":"matmul","dtype":"float32","dims":{"M":64,"N":64,"K":64}})", "w");
  s.trials = 2;
  s.confirm_top = 0;
  fixtures::store_under_former_host_target(path.string(), Workload::from_json(s.workload), {5.0, 9.0});
  const SingleTuneOutcome out = tune_single(s);
  EXPECT_EQ(out.result.resumed, 2);
  EXPECT_EQ(out.result.measured, 0);
  EXPECT_DOUBLE_EQ(out.result.best_us, 5.0);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
}

}  // namespace
}  // namespace atvoss::tuner
