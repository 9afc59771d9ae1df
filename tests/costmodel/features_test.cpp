#include "costmodel/features.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "core/error.hpp"
#include "costmodel/cost_model.hpp"
#include "host/cpu_unit.hpp"
#include "lowering/lowering.hpp"
#include "synthetic.hpp"

namespace atvoss::costmodel {
namespace {

using testing::matmul;
using testing::test_target;

Workload wl(const Json& j) { return Workload::from_json(j); }

TEST(FeaturesTest, NamesAreUniqueAndDescribed) {
  const auto& infos = feature_infos();
  ASSERT_EQ(infos.size(), feature_count());
  std::set<std::string> names;
  for (const auto& f : infos) {
    SCOPED_TRACE(f.name);
    EXPECT_TRUE(names.insert(f.name).second);
    EXPECT_FALSE(f.meaning.empty());
    EXPECT_FALSE(f.unit.empty());
  }
  EXPECT_EQ(feature_version(), kFeatureVersion);
}

// Every template, including degenerate schedules, gives feature_count() finite values.
TEST(FeaturesTest, FixedLengthAndFiniteForEveryTemplate) {
  const struct {
    const char* name;
    Json workload;
    Schedule schedule;
  } kCases[] = {
      {"matmul",
       {{"op", "matmul"}, {"dims", {{"M", 1024}, {"N", 1000}, {"K", 77}}}},
       Schedule({{"tile_m", 64},
                 {"tile_n", 128},
                 {"tile_k", 32},
                 {"k_steps", 2},
                 {"async_copy_depth", 2},
                 {"tile_order", 2},
                 {"fusion_level", 0}})},
      {"batch_matmul_epilogue",
       {{"op", "batch_matmul"},
        {"dims", {{"B", 12}, {"M", 128}, {"N", 128}, {"K", 64}}},
        {"epilogue", {"bias", "gelu", "add"}}},
       Schedule({{"tile_m", 16}, {"tile_n", 16}, {"tile_k", 16}, {"fusion_level", 3}})},
      {"conv2d",
       {{"op", "conv2d"},
        {"dims", {{"N", 1}, {"C", 64}, {"H", 56}, {"W", 56}, {"K", 64}, {"R", 3}, {"S", 3}, {"pad", 1}}},
        {"epilogue", {"bias", "relu"}}},
       Schedule({{"tile_h", 14},
                 {"tile_w", 14},
                 {"tile_n", 64},
                 {"tile_k", 64},
                 {"k_steps", 1},
                 {"async_copy_depth", 2},
                 {"tile_order", 0},
                 {"fusion_level", 1}})},
      {"depthwise",
       {{"op", "depthwise_conv2d"},
        {"dims", {{"N", 1}, {"C", 32}, {"H", 112}, {"W", 112}, {"R", 3}, {"S", 3}, {"stride", 2}}}},
       Schedule({{"tile_h", 8}, {"tile_w", 8}, {"tile_c", 16}, {"async_copy_depth", 4}})},
      {"layernorm_split_row",
       {{"op", "layernorm"}, {"dims", {{"M", 4096}, {"N", 1024}}}},
       Schedule({{"tile_m", 8}, {"tile_n", 256}, {"async_copy_depth", 2}})},
      {"elementwise_empty_schedule", {{"op", "elementwise"}, {"dims", {{"M", 7}, {"N", 3}}}}, Schedule()},
      {"recorded",
       {{"op", "recorded"}, {"table", "x.csv"}},
       Schedule({{"block_size_x", 128}, {"negative", -4}, {"zero", 0}})},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto row = features(wl(c.workload), test_target(), c.schedule);
    ASSERT_EQ(row.size(), feature_count());
    for (std::size_t i = 0; i < row.size(); ++i) {
      EXPECT_TRUE(std::isfinite(row[i])) << feature_infos()[i].name;
    }
  }
}

// A complete schedule is lowered as it is, without the copy that completes a partial one
// (Featurizer::lowerable_as_is, which took featurising 10k candidates from 35 to 19 ms). The
// row must be the one the completing path gives: an unknown knob forces that path and is
// dropped by it, so the two rows agree for every valid point of these spaces, host knobs
// included, and for points with a value the completion would clamp.
TEST(FeaturesTest, CompleteSchedulesGiveTheRowTheCompletingPathGives) {
  std::mt19937_64 rng(3);
  host::register_cpu_unit();  // a host target's plans go through the CPU's unit
  Target cpu = test_target();
  cpu.organisation = "cpu";
  const struct {
    Workload workload;
    Target target;
  } kCases[] = {
      {matmul(4096, 2304, 768), test_target()},
      {wl({{"op", "conv2d"},
           {"dims", {{"N", 8}, {"C", 64}, {"H", 56}, {"W", 56}, {"K", 64}, {"R", 3}, {"S", 3}, {"pad", 1}}},
           {"epilogue", {"batchnorm", "relu"}}}),
       test_target()},
      {wl({{"op", "batch_matmul"},
           {"dims", {{"B", 12}, {"M", 128}, {"N", 128}, {"K", 64}}},
           {"epilogue", {"bias", "gelu", "add"}}}),
       test_target()},
      {matmul(128, 768, 768), cpu},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.workload.label());
    const ScheduleSpace space = lowering::space_for(c.workload, c.target);
    std::vector<Schedule> points, forced;
    for (int i = 0; i < 200; ++i) {
      Schedule s = space.schedule_at(space.random_point(rng));
      if (i % 10 == 0) s.set("micro_m", 4);        // a host-only knob beside the space's
      if (i % 10 == 1) s.set("tile_order", 7);     // clamped to 2 by the completion
      if (i % 10 == 2) s.set("fusion_level", -1);  // clamped to 0
      points.push_back(s);
      Schedule with_unknown = s;
      with_unknown.set("zz_not_a_knob", 1);
      forced.push_back(with_unknown);
    }
    const FeatureMatrix fast = featurize(c.workload, c.target, points);
    const FeatureMatrix reference = featurize(c.workload, c.target, forced);
    ASSERT_EQ(fast.data.size(), reference.data.size());
    for (std::size_t i = 0; i < fast.data.size(); ++i) {
      ASSERT_EQ(fast.data[i], reference.data[i])
          << "row " << i / fast.cols << " feature " << feature_infos()[i % fast.cols].name;
    }
  }
}

// The host's register block and thread count are knobs the plan does not describe: two
// schedules that differ only there must still give different rows, or no model can learn
// which block is fast (docs/host-backend.md, "Tuning quality on real noise").
TEST(FeaturesTest, HostOnlyKnobsAreFeatures) {
  const Workload w = matmul(128, 768, 768);
  const Schedule base({{"micro_m", 6},
                       {"micro_n", 16},
                       {"threads", 1},
                       {"tile_m", 96},
                       {"tile_n", 256},
                       {"tile_k", 256},
                       {"k_steps", 4},
                       {"async_copy_depth", 1},
                       {"tile_order", 0},
                       {"fusion_level", 0}});
  const auto row = features(w, test_target(), base);
  for (const auto& [knob, value] : {std::pair{"micro_m", 4}, std::pair{"micro_n", 24}, std::pair{"threads", 2}}) {
    SCOPED_TRACE(knob);
    Schedule other = base;
    other.set(knob, value);
    const auto changed = features(w, test_target(), other);
    const std::size_t at = feature_index(std::string("knob_") + knob);
    EXPECT_EQ(row[at], float(base.at(knob)));
    EXPECT_EQ(changed[at], float(value));
  }
}

// A host matmul schedule with a micro_m x micro_n register block and 128 x 256 x 128 cache blocks.
Schedule cpu_block_schedule(int micro_m, int micro_n) {
  return Schedule({{"micro_m", micro_m},
                   {"micro_n", micro_n},
                   {"threads", 1},
                   {"tile_m", 128},
                   {"tile_n", 256},
                   {"tile_k", 128},
                   {"k_steps", 1},
                   {"async_copy_depth", 1},
                   {"tile_order", 0},
                   {"fusion_level", 0}});
}

// The register block's issue model: 4 x 16 on 16 lanes keeps 4 FMA chains, half of the 8
// that two pipes of latency 4 need (the default where the target gives no fma_chains); 8 x 16
// waits on its 9 loads; 8 x 32 issues at the pipes' rate. The roofline's compute term, and so
// the heuristic's ranking, follows.
TEST(FeaturesTest, CpuRegisterBlockSetsTheIssueEfficiency) {
  const Workload w = matmul(128, 768, 768);
  host::register_cpu_unit();
  Target cpu = test_target();
  cpu.organisation = "cpu";
  cpu.cube_m = 16;
  cpu.cube_n = cpu.cube_k = 1;
  const auto row = [&](int mr, int nr) { return features(w, cpu, cpu_block_schedule(mr, nr)); };
  const std::size_t eff = feature_index("reg_issue_efficiency"), est = feature_index("est_compute_us");
  const auto narrow = row(4, 16), tall = row(8, 16), wide = row(8, 32);
  EXPECT_FLOAT_EQ(narrow[eff], 0.5f);
  EXPECT_FLOAT_EQ(tall[eff], float(4 / 4.5));
  EXPECT_FLOAT_EQ(wide[eff], 1.0f);
  EXPECT_FLOAT_EQ(wide[feature_index("reg_accumulators")], 16.0f);
  EXPECT_FLOAT_EQ(wide[feature_index("reg_loads_per_fma")], 10.0f / 16);
  EXPECT_GT(narrow[est], tall[est]);
  EXPECT_GT(tall[est], wide[est]);
  const auto heuristic = make_cost_model("heuristic", 1);
  const std::vector<Schedule> pair = {cpu_block_schedule(4, 16), cpu_block_schedule(8, 32)};
  const auto scores = heuristic->predict(w, cpu, pair);
  EXPECT_GT(scores[1], scores[0]);
  // A core that needs 16 chains (four pipes of latency 4) runs 8 x 16 at half its peak.
  cpu.fma_chains = 16;
  EXPECT_FLOAT_EQ(row(8, 16)[eff], 0.5f);
  EXPECT_FLOAT_EQ(row(8, 32)[eff], 1.0f);
  // An NPU plan has no register block.
  EXPECT_FLOAT_EQ(features(w, test_target(), pair[0])[eff], 1.0f);
}

TEST(FeaturesTest, DerivedQuantitiesFollowTheKnobs) {
  const Workload w = matmul(4096, 4096, 4096);
  Schedule small({{"tile_m", 16},
                  {"tile_n", 16},
                  {"tile_k", 16},
                  {"k_steps", 1},
                  {"async_copy_depth", 1},
                  {"tile_order", 0},
                  {"fusion_level", 0}});
  Schedule big = small;
  big.set("tile_m", 128);
  big.set("tile_n", 256);
  big.set("k_steps", 8);
  big.set("async_copy_depth", 2);
  const auto a = features(w, test_target(), small), b = features(w, test_target(), big);
  auto f = [](const std::vector<float>& r, const char* n) { return r[feature_index(n)]; };
  EXPECT_GT(f(b, "tile_intensity"), f(a, "tile_intensity"));
  EXPECT_LT(f(b, "tiles"), f(a, "tiles"));
  EXPECT_LT(f(b, "operand_read_bytes"), f(a, "operand_read_bytes"));
  EXPECT_GT(f(b, "level3_occupancy"), f(a, "level3_occupancy"));  // the NPU's L1
  EXPECT_GT(f(b, "copy_a_bytes"), f(a, "copy_a_bytes"));
  EXPECT_LT(f(b, "est_time_us"), f(a, "est_time_us"));
  EXPECT_EQ(f(b, "copy_depth_hides"), 1.0f);
  EXPECT_EQ(f(a, "knob_tile_n"), 16.0f);
  EXPECT_EQ(f(b, "log2_tile_n"), float(std::log2(257.0)));
}

// The occupancy features must flag what the simulator would reject, so the model (and
// the heuristic) can learn the validity boundary.
TEST(FeaturesTest, OverflowingBuffersShowOccupancyAboveOne) {
  const Workload w = matmul(2048, 2048, 2048);
  Schedule fits({{"tile_m", 128},
                 {"tile_n", 128},
                 {"tile_k", 64},
                 {"k_steps", 2},
                 {"async_copy_depth", 2},
                 {"tile_order", 0},
                 {"fusion_level", 0}});
  Schedule overflow = fits;
  overflow.set("tile_m", 256);
  overflow.set("tile_k", 256);
  overflow.set("async_copy_depth", 4);  // L0A: 256 x 256 x 2 B x 4 buffers = 512 KB > 64 KB
  const std::size_t l0a = feature_index("level0_occupancy"), peak = feature_index("max_occupancy");
  EXPECT_LE(features(w, test_target(), fits)[peak], 1.0f);
  EXPECT_NEAR(features(w, test_target(), overflow)[l0a], 8.0f, 1e-5);
  const std::vector<Schedule> both = {fits, overflow};
  const auto scores = make_cost_model("heuristic")->predict(w, test_target(), both);
  EXPECT_GT(scores[0], scores[1]);
}

// The occupancy and capacity features follow the target's compute unit's levels, nearest the
// compute first: on the NPU L0A, L0B, L0C, L1, UB, L2; on a CPU registers, L1d, L2, L3, where
// L1d holds both micro-panels and L3 the B panel. A slot past the unit's levels stays 0.
TEST(FeaturesTest, LevelFeaturesFollowTheComputeUnitsLevels) {
  host::register_cpu_unit();
  Target cpu = test_target();
  cpu.organisation = "cpu";
  cpu.cube_m = 16;
  cpu.cube_n = cpu.cube_k = 1;
  cpu.l0c_bytes = 2048;                   // 32 vector registers of 64 bytes
  cpu.l0a_bytes = cpu.l0b_bytes = 49152;  // L1d
  cpu.l1_bytes = 1 << 20;                 // L2
  cpu.l2_bytes = 32 << 20;                // L3
  const Schedule s = cpu_block_schedule(8, 32);
  const Workload fp32 = wl({{"op", "matmul"}, {"dims", {{"M", 128}, {"N", 768}, {"K", 768}}}, {"dtype", "float32"}});
  const auto row = features(fp32, cpu, s);
  auto f = [&](const char* n) { return row[feature_index(n)]; };
  const auto lg = [](double x) { return float(std::log2(x + 1)); };
  EXPECT_FLOAT_EQ(f("tg_level0_bytes"), lg(2048));
  EXPECT_FLOAT_EQ(f("tg_level1_bytes"), lg(49152));
  EXPECT_FLOAT_EQ(f("tg_level3_bytes"), lg(32 << 20));
  EXPECT_FLOAT_EQ(f("tg_level4_bytes"), 0.0f);
  EXPECT_FLOAT_EQ(f("level0_occupancy"), float(8 * 32 * 4 / 2048.0));               // the accumulators
  EXPECT_FLOAT_EQ(f("level1_occupancy"), float((8 + 32) * 128 * 4 / 49152.0));      // both micro-panels
  EXPECT_FLOAT_EQ(f("level2_occupancy"), float(128 * 128 * 4 / double(1 << 20)));   // the A block
  EXPECT_FLOAT_EQ(f("level3_occupancy"), float(128 * 256 * 4 / double(32 << 20)));  // the B panel
  EXPECT_FLOAT_EQ(f("level4_occupancy"), 0.0f);

  const Target npu = test_target();
  const auto npu_row = features(matmul(128, 768, 768), npu, Schedule({{"tile_m", 64}}));
  EXPECT_FLOAT_EQ(npu_row[feature_index("tg_level1_bytes")], lg(double(npu.l0b_bytes)));
  EXPECT_FLOAT_EQ(npu_row[feature_index("tg_level5_bytes")], lg(double(npu.l2_bytes)));
  EXPECT_FLOAT_EQ(npu_row[feature_index("level5_occupancy")], 0.0f);  // L2 is a cache no buffer is placed in
}

// Fusion follows the chain: an op the level cannot fuse blocks every op after it.
TEST(FeaturesTest, FusionStopsAtTheFirstUnfusableOp) {
  const Workload w =
      wl({{"op", "matmul"}, {"dims", {{"M", 512}, {"N", 512}, {"K", 512}}}, {"epilogue", {"batchnorm", "relu"}}});
  const auto row = features(w, test_target(), Schedule({{"tile_m", 64}, {"fusion_level", 1}}));
  EXPECT_EQ(row[feature_index("fused_ops")], 0.0f);  // relu is level 1 but follows batchnorm
  EXPECT_EQ(row[feature_index("unfused_ops")], 2.0f);
}

TEST(FeaturesTest, FusionCountsEpilogueOpsAndKernels) {
  const Workload w = wl(
      {{"op", "matmul"}, {"dims", {{"M", 512}, {"N", 512}, {"K", 512}}}, {"epilogue", {"bias", "relu", "batchnorm"}}});
  auto row = [&](int level) {
    return features(w, test_target(),
                    Schedule({{"tile_m", 64}, {"tile_n", 64}, {"tile_k", 64}, {"fusion_level", level}}));
  };
  const std::size_t fused = feature_index("fused_ops"), kernels = feature_index("kernels");
  EXPECT_EQ(row(0)[fused], 0.0f);
  EXPECT_EQ(row(0)[kernels], 4.0f);
  EXPECT_EQ(row(1)[fused], 2.0f);
  EXPECT_EQ(row(2)[fused], 3.0f);
  EXPECT_EQ(row(2)[kernels], 1.0f);
}

TEST(FeaturesTest, ConvHaloGrowsAsSpatialTilesShrink) {
  const Workload w =
      wl({{"op", "conv2d"},
          {"dims", {{"N", 1}, {"C", 64}, {"H", 224}, {"W", 224}, {"K", 64}, {"R", 3}, {"S", 3}, {"pad", 1}}}});
  auto halo = [&](int tile) {
    return features(w, test_target(), Schedule({{"tile_h", tile}, {"tile_w", tile}}))[feature_index("halo_overhead")];
  };
  EXPECT_GT(halo(4), halo(16));
  EXPECT_GT(halo(16), halo(64));
  EXPECT_GT(halo(64), 1.0f);
}

TEST(FeaturesTest, RecordedKnobsFillGenericSlotsInNameOrder) {
  const Workload w = wl({{"op", "recorded"}, {"table", "t.csv"}});
  const auto row = features(w, test_target(), Schedule({{"b", 8}, {"a", 3}}));
  EXPECT_EQ(row[feature_index("tmpl_generic")], 1.0f);
  EXPECT_EQ(row[feature_index("gen_knob_0")], 3.0f);  // "a" sorts first
  EXPECT_EQ(row[feature_index("gen_knob_1")], 8.0f);
  EXPECT_EQ(row[feature_index("gen_log2_1")], float(std::log2(9.0)));
  EXPECT_EQ(row[feature_index("knob_tile_m")], 0.0f);
}

TEST(FeaturesTest, TooManyRecordedKnobsIsBadInput) {
  Schedule s;
  for (std::size_t i = 0; i <= kGenericKnobSlots; ++i) s.set("k" + std::to_string(i), 1);
  try {
    features(wl({{"op", "recorded"}, {"table", "t.csv"}}), test_target(), s);
    FAIL() << "expected bad_input";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
  }
}

TEST(FeaturesTest, FeaturizeMatchesSingleRows) {
  std::mt19937_64 rng(3);
  std::vector<Schedule> s;
  for (int i = 0; i < 20; ++i) s.push_back(testing::random_matmul_schedule(rng));
  const Workload w = matmul(256, 512, 1024);
  const FeatureMatrix m = featurize(w, test_target(), s);
  ASSERT_EQ(m.rows, s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto one = features(w, test_target(), s[i]);
    EXPECT_TRUE(std::equal(one.begin(), one.end(), m.row(i).begin()));
  }
}

}  // namespace
}  // namespace atvoss::costmodel
