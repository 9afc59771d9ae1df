// Workloads with op "recorded" are served from a table of measurements
// (core/recorded_space.hpp) through the same space_for/simulate calls.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "simulator/presets.hpp"
#include "simulator/simulator.hpp"
#include "test_workloads.hpp"

namespace atvoss::simulator {
namespace {

TEST(RecordedTest, SpaceAndMeasurementsComeFromTheTable) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("atvoss_recorded_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".csv");
  std::ofstream(path) << "block_x,block_y,time_us,status\n"
                         "32,1,12.5,ok\n32,2,10.0,ok\n64,1,8.25,ok\n64,2,0,compile_error\n";
  const Workload w = testing::workload(R"({"op":"recorded","table":")" + path.string() + R"("})");
  const Target t = preset("ascend910b");
  const ScheduleSpace space = space_for(w, t);
  ASSERT_EQ(space.dimensions(), 2u);
  EXPECT_EQ(space.knobs()[0].name, "block_x");
  const Measurement ok = simulate(t, w, Schedule({{"block_x", 64}, {"block_y", 1}}));
  EXPECT_TRUE(ok.ok());
  EXPECT_DOUBLE_EQ(ok.time_us, 8.25);
  EXPECT_FALSE(simulate(t, w, Schedule({{"block_x", 64}, {"block_y", 2}})).ok());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace atvoss::simulator
