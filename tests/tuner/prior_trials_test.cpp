// The tuner's warm start: StrategySetup fills the prior of tpe and of model-guided (which
// trains its model on it) from the database's records of related workloads (the same kernel
// recorded on another GPU), never from the workload's own history, and up to the watermark a
// resume restores. Measured on two real recorded spaces (data/recorded-spaces: convolution
// on an RTX 3090 and a TITAN RTX).
#include "tuner/strategy_setup.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "backend/backend.hpp"
#include "core/recorded_space.hpp"
#include "simulator/presets.hpp"

namespace atvoss::tuner {
namespace {

std::string table(const char* name) { return std::string(ATVOSS_DATA_DIR) + "/recorded-spaces/" + name + ".json.gz"; }
Workload recorded(const std::string& path) { return Workload::from_json(Json{{"op", "recorded"}, {"table", path}}); }
// Loaded once per test binary: parsing a table is the slow part of these tests.
const RecordedSpace& space(const char* name) {
  static std::map<std::string, std::shared_ptr<const RecordedSpace>> cache;
  auto& rs = cache[name];
  if (!rs) rs = RecordedSpace::load(table(name));
  return *rs;
}

class PriorTrialsTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("atvoss_prior_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".db");
    std::filesystem::remove(path_);
  }
  void TearDown() override {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_.string() + suffix);
  }

  // Stores every 8th configuration of `name` (a few hundred: what a run leaves in a
  // database) as measured for its workload on `on` (default target_).
  void store_table(db::TuningDatabase& db, const char* name, std::optional<Target> on = std::nullopt) const {
    const auto& rs = space(name);
    const auto all = rs.configurations();
    std::vector<db::Record> records;
    for (std::size_t i = 0; i < all.size(); i += 8) {
      records.emplace_back(recorded(table(name)), on.value_or(target_), all[i], rs.measure(all[i]));
    }
    db.records().insert(records);
  }

  std::vector<Schedule> first_proposals(const db::TuningDatabase& db, std::uint64_t seed, std::size_t n,
                                        std::optional<std::int64_t> upto = std::nullopt) const {
    const auto w = recorded(table("convolution-RTX_Titan"));
    StrategyConfig config;
    config.name = GetParam();
    config.seed = seed;
    config.transfer_upto = upto;
    StrategySetup setup(backend::space_for(w, target_), w, target_, db, config);
    return setup.strategy().propose(n);
  }

  // Evaluations the search needs to reach `fraction` of the optimum of `name` (cap: 200).
  int evaluations_to(const db::TuningDatabase& db, std::uint64_t seed, double fraction,
                     const char* name = "convolution-RTX_Titan") const {
    const auto& rs = space(name);
    const auto w = recorded(table(name));
    StrategyConfig config;
    config.name = GetParam();
    config.seed = seed;
    StrategySetup setup(backend::space_for(w, target_), w, target_, db, config);
    double best = HUGE_VAL;
    for (int evals = 1; evals <= 200; ++evals) {
      const auto batch = setup.strategy().propose(1);
      const auto m = rs.measure(batch.at(0));
      if (m.ok()) best = std::min(best, m.time_us);
      if (*rs.optimum_us() / best >= fraction) return evals;
      setup.strategy().update(std::vector<search::Trial>{{batch[0], m.status, m.time_us}});
    }
    return 201;
  }

  std::filesystem::path path_;
  Target target_ = simulator::preset("ascend910b");
};

TEST_P(PriorTrialsTest, RelatedRecordsChangeTheProposalsAndOwnHistoryDoesNot) {
  auto empty = db::TuningDatabase::open((path_.string() + ".empty"));
  auto own = db::TuningDatabase::open(path_.string() + ".own");
  store_table(own, "convolution-RTX_Titan");  // the workload's own history: the session observes it
  auto related = db::TuningDatabase::open(path_.string());
  store_table(related, "convolution-RTX_3090");
  const auto cold = first_proposals(empty, 3, 8);
  EXPECT_EQ(first_proposals(own, 3, 8), cold);
  EXPECT_NE(first_proposals(related, 3, 8), cold);
  for (const char* db : {".empty", ".own"}) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_.string() + db + suffix);
  }
}

TEST_P(PriorTrialsTest, WarmStartReachesTheOptimumSooner) {
  auto empty = db::TuningDatabase::open(path_.string() + ".empty");
  auto related = db::TuningDatabase::open(path_.string());
  store_table(related, "convolution-RTX_3090");
  int cold = 0, warm = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    cold += evaluations_to(empty, seed, 0.95);
    warm += evaluations_to(related, seed, 0.95);
  }
  EXPECT_LT(2 * warm, cold) << "warm " << warm << " cold " << cold << " evaluations over 5 seeds";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_.string() + ".empty" + suffix);
}

TEST_P(PriorTrialsTest, ResumeTakesThePriorUpToTheWatermark) {
  auto db = db::TuningDatabase::open(path_.string());
  store_table(db, "convolution-RTX_3090");
  const auto w = recorded(table("convolution-RTX_Titan"));
  StrategyConfig config;
  config.name = GetParam();
  config.seed = 5;
  StrategySetup first(backend::space_for(w, target_), w, target_, db, config);
  const auto before = first.strategy().propose(8);
  const std::int64_t upto = first.transfer_upto();
  EXPECT_GT(upto, 0);
  // Related records arrive after the watermark: the same table stored for another target.
  store_table(db, "convolution-RTX_Titan", simulator::preset("ascend910"));
  EXPECT_EQ(first_proposals(db, 5, 8, upto), before);
  EXPECT_NE(first_proposals(db, 5, 8), before);  // a fresh setup does take them
}

INSTANTIATE_TEST_SUITE_P(Strategies, PriorTrialsTest, ::testing::Values("tpe", "model-guided"),
                         [](const auto& info) { return std::string(info.param) == "tpe" ? "tpe" : "model_guided"; });

// Another kernel's table in the database (convolution_milo on an AMD W6600 for the TITAN RTX
// convolution: other knobs, so none of its schedules lies in this space) reaches model-guided
// as a prior space, and never the own history. And the convolution on an RTX 3090 helps the
// search on convolution_milo: it reaches 95 % of that optimum sooner.
class PriorSpacesTest : public PriorTrialsTest {};

TEST_P(PriorSpacesTest, AnotherKernelsTableBecomesAPriorSpaceAndHelps) {
  auto empty = db::TuningDatabase::open(path_.string() + ".empty");
  auto db = db::TuningDatabase::open(path_.string());
  store_table(db, "convolution_milo-W6600", simulator::preset("ascend910"));
  store_table(db, "convolution-RTX_Titan");  // own history
  const auto w = recorded(table("convolution-RTX_Titan"));
  StrategyConfig config;
  config.name = GetParam();
  StrategySetup setup(backend::space_for(w, target_), w, target_, db, config);
  ASSERT_EQ(setup.prior_tables().size(), 1u);
  EXPECT_EQ(setup.prior_tables()[0], recorded(table("convolution_milo-W6600")).label() + " on ascend910");
  StrategySetup cold_setup(backend::space_for(w, target_), w, target_, empty, config);
  EXPECT_TRUE(cold_setup.prior_tables().empty());

  auto other = db::TuningDatabase::open(path_.string() + ".other");
  store_table(other, "convolution-RTX_3090", simulator::preset("ascend910"));
  int cold = 0, warm = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    cold += evaluations_to(empty, seed, 0.95, "convolution_milo-W6600");
    warm += evaluations_to(other, seed, 0.95, "convolution_milo-W6600");
  }
  EXPECT_LT(warm, cold) << "warm " << warm << " cold " << cold << " evaluations over 5 seeds";
  std::printf("convolution_milo-W6600 to 95 %%: %d evaluations over 5 seeds cold, %d with the RTX 3090 table\n", cold,
              warm);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(path_.string() + ".empty" + suffix);
    std::filesystem::remove(path_.string() + ".other" + suffix);
  }
}

INSTANTIATE_TEST_SUITE_P(ModelGuided, PriorSpacesTest, ::testing::Values("model-guided"),
                         [](const auto&) { return std::string("model_guided"); });

}  // namespace
}  // namespace atvoss::tuner
