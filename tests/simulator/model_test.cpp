// Behaviours of the performance model that a tuner relies on: each one is a
// mechanism of simulator.hpp that a change could silently switch off.
#include <gtest/gtest.h>

#include "../lowering/plan_target.hpp"
#include "simulator/presets.hpp"
#include "simulator/simulator.hpp"
#include "test_workloads.hpp"

namespace atvoss::simulator {
namespace {

using lowering::testing::conv_schedule;
using lowering::testing::matmul_schedule;
using testing::workload;

constexpr SimOptions kNoNoise{.noise = 0, .repeat = 1, .seed = 0};

double simulated_us(const Target& t, const Workload& w, const Schedule& s) {
  const Measurement m = simulate(t, w, s, kNoNoise);
  EXPECT_TRUE(m.ok()) << m.message;
  return m.time_us;
}

TEST(ModelTest, TileOrderMattersWhenOperandsOverflowL2) {
  // 910B: B is 512 MB against a 192 MB L2 and is re-read once per tile row in
  // row-major order; 24 cores pulling 64 B/cycle each outrun HBM's 850 B/cycle
  // once most reads miss. Column-major re-reads A (128 MB, fits) instead.
  const Target t = preset("ascend910b");
  const Workload w = workload(R"({"op":"matmul","dims":{"M":16384,"N":65536,"K":4096}})");
  const double row = simulated_us(t, w, matmul_schedule(128, 256, 64, 4, 2, 0));
  const double column = simulated_us(t, w, matmul_schedule(128, 256, 64, 4, 2, 1));
  const double swizzled = simulated_us(t, w, matmul_schedule(128, 256, 64, 4, 2, 2));
  EXPECT_LT(column, 0.95 * row);
  EXPECT_LT(swizzled, 0.95 * row);
  const Target big_l2 = target_from_json(Json{{"preset", "ascend910b"}, {"l2_bytes", 1LL << 30}});
  EXPECT_NEAR(simulated_us(big_l2, w, matmul_schedule(128, 256, 64, 4, 2, 0)),
              simulated_us(big_l2, w, matmul_schedule(128, 256, 64, 4, 2, 2)), 1e-6 * row);
}

TEST(ModelTest, LastWaveLeavesCoresIdle) {
  const Target t = preset("ascend910b");  // 24 cores
  const Schedule s = matmul_schedule(128, 128, 64, 4, 2, 0);
  // 24 tiles fill one wave; 25 tiles need a second wave for one tile.
  const double one_wave = simulated_us(t, workload(R"({"op":"matmul","dims":{"M":768,"N":512,"K":4096}})"), s);
  const double two_waves = simulated_us(t, workload(R"({"op":"matmul","dims":{"M":3200,"N":128,"K":4096}})"), s);
  EXPECT_GT(two_waves, 1.6 * one_wave);
}

TEST(ModelTest, ASplitReductionFillsTheCoresAWeightGradientLeavesIdle) {
  // A ResNet-50 1x1 conv's weight gradient at batch 256: a 256 x 64 filter from 802816 pixels.
  const Target t = preset("ascend910");  // 32 cores
  const Workload wgrad = workload(R"({"op":"matmul","dims":{"M":256,"N":64,"K":802816},"dtype":"float16"})");
  std::map<std::string, std::int64_t> values = matmul_schedule(128, 64, 64, 4, 2, 0).values();
  values["split_k"] = 1;
  const double whole = simulated_us(t, wgrad, Schedule(values));
  values["split_k"] = 16;  // 2 output tiles x 16 parts: every core busy
  const double split = simulated_us(t, wgrad, Schedule(values));
  EXPECT_LT(split, whole / 10);
  values["split_k"] = 32;  // twice the parts on the same cores: two waves of half the work
  EXPECT_GT(simulated_us(t, wgrad, Schedule(values)), 0.8 * split);
  EXPECT_GE(default_schedule(wgrad, t).at("split_k"), 16);
}

TEST(ModelTest, BandwidthBoundOpRunsAtHbmSpeed) {
  const Target t = preset("ascend910b");
  const Workload add = workload(R"({"op":"elementwise","dims":{"M":8192,"N":8192}})");
  const Schedule s({{"tile_m", 8}, {"tile_n", 2048}, {"async_copy_depth", 2}});
  const double hbm_us = add.compulsory_bytes() / t.hbm_bytes_per_second() * 1e6;
  const double time = simulated_us(t, add, s);
  EXPECT_GT(time, hbm_us);
  EXPECT_LT(time, 1.2 * hbm_us + t.launch_us);
}

TEST(ModelTest, TilesOffTheFractalWasteCubeWork) {
  const Target t = preset("ascend910b");
  // One 200-row tile pads to 208 rows of cube work; a 192-row tile pads to none.
  const Workload padded = workload(R"({"op":"matmul","dims":{"M":200,"N":4096,"K":4096}})");
  const Workload aligned = workload(R"({"op":"matmul","dims":{"M":192,"N":4096,"K":4096}})");
  const Measurement p = simulate(t, padded, matmul_schedule(200, 128, 64, 4, 2, 0), kNoNoise);
  const Measurement a = simulate(t, aligned, matmul_schedule(192, 128, 64, 4, 2, 0), kNoNoise);
  ASSERT_TRUE(p.ok() && a.ok()) << p.message << a.message;
  const double per_flop_padded = p.profile.compute_us / padded.flops();
  const double per_flop_aligned = a.profile.compute_us / aligned.flops();
  EXPECT_NEAR(per_flop_padded / per_flop_aligned, 208.0 / 200.0, 0.01);
}

TEST(ModelTest, UnfusedEpilogueRoundTripsGmAndLaunchesKernels) {
  const Target t = preset("ascend910");
  const Workload w = workload(
      R"({"op":"conv2d","dims":{"N":8,"C":64,"H":112,"W":112,"K":64,"R":3,"S":3,"pad":1},
          "epilogue":["bias","relu"]})");
  Schedule s({{"tile_h", 16},
              {"tile_w", 32},
              {"tile_n", 64},
              {"tile_k", 64},
              {"k_steps", 2},
              {"async_copy_depth", 2},
              {"tile_order", 0},
              {"fusion_level", 0}});
  const Measurement unfused = simulate(t, w, s, kNoNoise);
  s.set("fusion_level", 1);
  const Measurement fused = simulate(t, w, s, kNoNoise);
  ASSERT_TRUE(unfused.ok() && fused.ok());
  EXPECT_EQ(unfused.profile.kernels, 3);
  EXPECT_EQ(fused.profile.kernels, 1);
  // Each unfused op reads and writes the [8, 64, 112, 112] fp16 output once more.
  const double pass = 8.0 * 64 * 112 * 112 * 2;
  EXPECT_NEAR(unfused.profile.gm_bytes - fused.profile.gm_bytes, 2 * 2 * pass, 0.01 * pass);
  EXPECT_GT(unfused.time_us - fused.time_us, 2 * t.launch_us);
}

TEST(ModelTest, SmallCopiesPayStartCosts) {
  const Target t = preset("ascend910b");
  const Target free_start = target_from_json(Json{{"preset", "ascend910b"}, {"mte2_copy_start_cycles", 0}});
  const Workload w = workload(R"({"op":"matmul","dims":{"M":4096,"N":4096,"K":4096}})");
  // k_steps 1 issues 4x the copies of k_steps 4 (with shorter, less aligned
  // rows); the start cost must add to the gain that row alignment alone gives.
  auto k_steps_gain = [&](const Target& target) {
    return simulated_us(target, w, matmul_schedule(128, 256, 64, 1, 2, 0)) /
           simulated_us(target, w, matmul_schedule(128, 256, 64, 4, 2, 0));
  };
  EXPECT_GT(k_steps_gain(t), 1.05 * k_steps_gain(free_start));
  EXPECT_GT(k_steps_gain(free_start), 1.0);
}

TEST(ModelTest, SmallSpatialTilesRereadTheHalo) {
  const Target t = preset("ascend910");
  const Workload w = workload(R"({"op":"conv2d","dims":{"N":1,"C":64,"H":56,"W":56,"K":64,"R":3,"S":3,"pad":1}})");
  auto gm = [&](int side) {
    Schedule s({{"tile_h", side},
                {"tile_w", side},
                {"tile_n", 64},
                {"tile_k", 64},
                {"k_steps", 1},
                {"async_copy_depth", 1},
                {"tile_order", 0},
                {"fusion_level", 0}});
    return simulate(t, w, s, kNoNoise).profile.gm_bytes;
  };
  EXPECT_GT(gm(8), 1.3 * gm(56));
}

TEST(ModelTest, LayoutSetsTheConvTime) {
  // A 1x1 conv whose loads take every channel: NHWC reads whole pixel rows, the fractal
  // rows of one 32 B channel block, NCHW rows of one channel and a transpose in UB.
  const Target t = preset("ascend910");
  const Workload w = workload(R"({"op":"conv2d","dims":{"N":1,"C":64,"H":56,"W":56,"K":64,"R":1,"S":1}})");
  auto time_in = [&](int layout) { return simulated_us(t, w, conv_schedule(layout, 8, 56)); };
  const double fractal = time_in(0), nhwc = time_in(1), nchw = time_in(2);
  EXPECT_LT(nhwc, fractal);
  EXPECT_GT(nchw, fractal);
}

TEST(ModelTest, TransposePaysForShortStoreRows) {
  // The same bytes in and out: a copy does not care how tall its tiles are, a
  // transpose writes rows of tile_m elements and pays for short ones.
  const Target t = preset("ascend910");
  const Workload tr = workload(R"({"op":"transpose","dims":{"M":1024,"N":4096,"inner":1}})");
  const Workload copy = workload(R"({"op":"concat","dims":{"M":1024,"N":4096}})");
  auto rows = [](int tm, int tn) { return Schedule({{"tile_m", tm}, {"tile_n", tn}, {"async_copy_depth", 2}}); };
  const double tr_short = simulated_us(t, tr, rows(8, 512)), tr_tall = simulated_us(t, tr, rows(64, 512));
  const double copy_short = simulated_us(t, copy, rows(8, 512)), copy_tall = simulated_us(t, copy, rows(64, 512));
  EXPECT_GT(tr_short, 1.3 * copy_short);
  EXPECT_GT(tr_short / tr_tall, 1.3 * copy_short / copy_tall);
}

TEST(ModelTest, FusedAttentionBeatsItsUnfusedBaseline) {
  // At sequence 2048 the unfused form writes and reads 12 x 2048 x 2048 scores twice
  // through GM; the fused one keeps them on chip. Both at their vendor defaults.
  const Target t = preset("ascend910");
  const Workload fused = workload(R"({"op":"attention","dims":{"B":12,"S":2048,"L":2048,"D":64}})");
  const Workload qk = workload(R"({"op":"batch_matmul","dims":{"B":12,"M":2048,"N":2048,"K":64}})");
  const Workload sm = workload(R"({"op":"softmax","dims":{"M":24576,"N":2048}})");
  const Workload pv = workload(R"({"op":"batch_matmul","dims":{"B":12,"M":2048,"N":64,"K":2048}})");
  double unfused = 0;
  for (const auto* w : {&qk, &sm, &pv}) unfused += simulated_us(t, *w, default_schedule(*w, t));
  EXPECT_LT(simulated_us(t, fused, default_schedule(fused, t)), 0.8 * unfused);
}

}  // namespace
}  // namespace atvoss::simulator
