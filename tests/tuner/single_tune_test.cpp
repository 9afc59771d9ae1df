// Single-workload mode: the same ranges as the job spec, every input checked before the
// database is opened, and a run that stores what it measured.
#include "tuner/single_tune.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.hpp"

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

}  // namespace
}  // namespace atvoss::tuner
