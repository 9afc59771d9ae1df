// Sweep: the CSV it writes reads back as a recorded space with the same points and
// times, and a seeded sample is the same sample every time.
#include "backend/sweep.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend/targets.hpp"
#include "core/recorded_space.hpp"

namespace atvoss::backend {
namespace {

const Workload kRows = Workload::from_json(parse_json(R"({"op":"softmax","dims":{"M":64,"N":512}})", "w"));

TEST(SweepTest, CsvReadsBackAsARecordedSpaceWithTheSameTimes) {
  const Target t = load_target("ascend910b");
  SweepOptions o;
  o.measure.noise = 0;
  const auto path = std::filesystem::temp_directory_path() /
                    ("atvoss_sweep_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".csv");
  SweepResult r;
  {
    std::ofstream out(path);
    r = sweep(kRows, t, o, out);
  }
  const auto table = RecordedSpace::load(path.string());
  const ScheduleSpace space = space_for(kRows, t);
  std::uint64_t valid = 0;
  for (std::uint64_t i = 0; i < space.size(); ++i) valid += space.check(space.schedule_at(space.point_at(i))).ok;
  EXPECT_EQ(r.measured, valid);
  EXPECT_GT(r.best_us, 0);
  const Measurement best = table->measure(r.best_schedule);
  EXPECT_NEAR(best.time_us, r.best_us, 1e-6 * r.best_us);
  std::filesystem::remove(path);
}

TEST(SweepTest, SeededSampleRepeatsAndDiffersBySeed) {
  const ScheduleSpace space = space_for(kRows, load_target("ascend910b"));
  EXPECT_EQ(sweep_order(space, 5, 1), sweep_order(space, 5, 1));
  EXPECT_NE(sweep_order(space, 5, 1), sweep_order(space, 5, 2));
  const auto all = sweep_order(space, 0, 1);
  ASSERT_EQ(all.size(), space.size());
  EXPECT_EQ(all.front(), 0u);  // no limit: flat-index order
}

TEST(SweepTest, LimitCapsTheRows) {
  std::ostringstream out;
  SweepOptions o;
  o.limit = 3;
  const SweepResult r = sweep(kRows, load_target("ascend910b"), o, out);
  EXPECT_EQ(r.measured, 3u);
  std::size_t lines = 0;
  for (char c : out.str()) lines += c == '\n';
  EXPECT_EQ(lines, 4u);  // header + 3 rows
}

}  // namespace
}  // namespace atvoss::backend
