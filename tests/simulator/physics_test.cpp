// Property tests: no valid schedule beats physics, measurements are
// deterministic functions of (seed, schedule, repeat), and the profile adds up.
#include <cstdlib>
#include <random>

#include <gtest/gtest.h>

#include "lowering/epilogue.hpp"
#include "simulator/presets.hpp"
#include "simulator/simulator.hpp"
#include "test_workloads.hpp"

namespace atvoss::simulator {
namespace {

using testing::every_op;

// ATVOSS_TEST_SEED reproduces a failing run.
std::uint64_t test_seed() {
  const char* env = std::getenv("ATVOSS_TEST_SEED");
  return env ? std::strtoull(env, nullptr, 10) : 20261129;
}

TEST(PhysicsTest, NoValidScheduleBeatsPhysics) {
  const std::uint64_t seed = test_seed();
  SCOPED_TRACE("ATVOSS_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  int checked = 0;
  for (const auto& name : preset_names()) {
    const Target t = preset(name);
    for (const auto& w : every_op()) {
      SCOPED_TRACE(name + " " + w.label());
      const ScheduleSpace space = space_for(w, t);
      const double floor = physics_floor(t, w);
      for (int i = 0; i < 120; ++i) {
        auto p = space.random_valid_point(rng, 2000);
        ASSERT_TRUE(p.has_value()) << "no valid point found";
        const Schedule s = space.schedule_at(*p);
        SimOptions o;
        o.noise = i % 2 ? 0.0 : 0.05;
        o.seed = rng();
        const Measurement m = simulate(t, w, s, o);
        ASSERT_TRUE(m.ok()) << s.to_json().dump() << ": " << m.message;
        // A kernel that sits on the HBM roofline equals the floor up to the rounding
        // of the unit conversions.
        const double at_floor = floor * (1 - 1e-12);
        ASSERT_GE(m.time_us, at_floor) << s.to_json().dump();
        for (double r : m.repeats) ASSERT_GE(r, at_floor);
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 3000);
}

TEST(PhysicsTest, ProfileAddsUpToTheNoiselessTime) {
  for (const auto& w : every_op()) {
    const Target t = preset("ascend910b");
    const Schedule s = default_schedule(w, t);
    const Measurement m = simulate(t, w, s, {.noise = 0, .repeat = 1, .seed = 0});
    ASSERT_TRUE(m.ok()) << w.label() << ": " << m.message;
    const Profile& p = m.profile;
    SCOPED_TRACE(w.label() + " " + p.to_json().dump());
    EXPECT_NEAR(p.compute_us + p.dma_us + p.sync_wait_us + p.launch_us, m.time_us, 1e-6 * m.time_us);
    EXPECT_GE(p.l1_hit_rate, 0);
    EXPECT_LE(p.l1_hit_rate, 1);
    EXPECT_GT(p.dma_utilisation, 0);
    EXPECT_LE(p.dma_utilisation, 1);
    EXPECT_LE(p.cube_utilisation, 1);
    EXPECT_GE(p.gm_bytes, w.compulsory_bytes());
    EXPECT_GT(p.peak_workspace_bytes, 0);
    // An op without a fusion_level knob (rows) always fuses its epilogue.
    const auto split = lowering::split_epilogue(w.op(), w.epilogue(), int(s.get_or("fusion_level", 3)));
    EXPECT_EQ(p.kernels, 1 + int(split.unfused.size()));
  }
}

TEST(NoiseTest, SameSeedSameResultAnyOrder) {
  const Target t = preset("ascend910");
  const auto w = every_op()[0];
  const ScheduleSpace space = space_for(w, t);
  std::mt19937_64 rng(7);
  std::vector<Schedule> batch;
  for (int i = 0; i < 20; ++i) batch.push_back(space.schedule_at(*space.random_valid_point(rng)));
  const SimOptions o{.noise = 0.02, .repeat = 3, .seed = 42};
  std::vector<double> forward, backward(batch.size());
  for (const auto& s : batch) forward.push_back(simulate(t, w, s, o).time_us);
  for (std::size_t i = batch.size(); i-- > 0;) backward[i] = simulate(t, w, batch[i], o).time_us;
  EXPECT_EQ(forward, backward);
  const SimOptions other{.noise = 0.02, .repeat = 3, .seed = 43};
  EXPECT_NE(simulate(t, w, batch[0], o).time_us, simulate(t, w, batch[0], other).time_us);
}

TEST(NoiseTest, RepeatGivesMedianOfEveryRepeat) {
  const Target t = preset("ascend910b");
  const auto w = every_op()[1];
  const Schedule s = default_schedule(w, t);
  const Measurement m = simulate(t, w, s, {.noise = 0.02, .repeat = 5, .seed = 1});
  ASSERT_EQ(m.repeats.size(), 5u);
  EXPECT_DOUBLE_EQ(m.time_us, median(m.repeats));
  EXPECT_NE(m.repeats[0], m.repeats[1]);
}

TEST(NoiseTest, ZeroNoiseIsExactAndJitterIsAboutTwoPercent) {
  const Target t = preset("ascend910b");
  const auto w = every_op()[0];
  const Schedule s = default_schedule(w, t);
  const double exact = simulate(t, w, s, {.noise = 0, .repeat = 1, .seed = 1}).time_us;
  EXPECT_EQ(exact, simulate(t, w, s, {.noise = 0, .repeat = 1, .seed = 99}).time_us);
  const Measurement m = simulate(t, w, s, {.noise = 0.02, .repeat = 2001, .seed = 5});
  double sum = 0, sq = 0;
  int outliers = 0;
  for (double r : m.repeats) {
    const double x = std::log(r / exact);
    if (x > 0.09) ++outliers;
    sum += x;
    sq += x * x;
  }
  const double mean = sum / m.repeats.size();
  const double sd = std::sqrt(sq / m.repeats.size() - mean * mean);
  EXPECT_NEAR(mean, 0, 0.005);
  EXPECT_GT(sd, 0.015);
  EXPECT_LT(sd, 0.04);
  EXPECT_GE(outliers, 1);   // rare outliers exist ...
  EXPECT_LE(outliers, 40);  // ... and are rare
}

}  // namespace
}  // namespace atvoss::simulator
