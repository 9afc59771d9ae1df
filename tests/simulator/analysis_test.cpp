// The bottleneck and hint atvoss-analyze prints for a profile.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "simulator/analysis.hpp"
#include "simulator/presets.hpp"
#include "simulator/simulator.hpp"
#include "test_workloads.hpp"

namespace atvoss::simulator {
namespace {

using ::testing::HasSubstr;

Measurement with_profile(double compute, double dma, double sync, double launch, int kernels = 1) {
  Measurement m;
  m.profile.compute_us = compute;
  m.profile.dma_us = dma;
  m.profile.sync_wait_us = sync;
  m.profile.launch_us = launch;
  m.profile.kernels = kernels;
  m.profile.l1_hit_rate = 0.95;
  m.profile.cube_utilisation = 0.3;
  m.time_us = compute + dma + sync + launch;
  return m;
}

TEST(AnalysisTest, NamesTheLargestShareAndAFittingHint) {
  const Schedule single({{"tile_m", 64}, {"async_copy_depth", 1}, {"k_steps", 4}});
  const Schedule doubled({{"tile_m", 64}, {"async_copy_depth", 2}, {"k_steps", 1}});
  const struct {
    const char* name;
    Measurement m;
    Schedule s;
    const char* bottleneck;
    const char* hint;
  } cases[] = {
      {"launch, unfused", with_profile(1, 1, 0, 15, 3), doubled, "launch", "raise fusion_level"},
      {"launch, tiny op", with_profile(1, 1, 0, 5), doubled, "launch", "too small"},
      {"dma, no overlap", with_profile(2, 10, 1, 1), single, "dma", "async_copy_depth to 2"},
      {"dma, small copies", with_profile(2, 10, 1, 1), doubled, "dma", "raise k_steps"},
      {"sync", with_profile(2, 1, 10, 1), doubled, "sync-wait", "async_copy_depth"},
      {"compute", with_profile(10, 1, 0, 1), doubled, "compute", "padding"},
      {"dma plus unfused", with_profile(2, 30, 0, 10, 2), doubled, "dma", "1 epilogue op(s) run unfused"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const Analysis a = analyze(c.m, c.s);
    EXPECT_EQ(a.bottleneck, c.bottleneck);
    EXPECT_THAT(a.hint, HasSubstr(c.hint));
    EXPECT_NEAR(a.compute_share + a.dma_share + a.sync_share + a.launch_share, 1.0, 1e-9);
  }
}

TEST(AnalysisTest, SimulatedConvWithUnfusedEpilogueIsLaunchBound) {
  const Target t = preset("ascend910");
  const Workload w = testing::every_op()[4];  // ResNet-50 conv + batchnorm + relu
  Schedule s = default_schedule(w, t);
  s.set("fusion_level", 0);
  const Analysis a = analyze(simulate(t, w, s, {.noise = 0, .repeat = 1, .seed = 0}), s);
  EXPECT_EQ(a.bottleneck, "launch");
  EXPECT_THAT(a.hint, HasSubstr("fusion_level"));
}

}  // namespace
}  // namespace atvoss::simulator
