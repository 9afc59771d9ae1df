// Lowering: the plan is structure only — bytes, trip counts and footprints that follow
// the knobs — and the registries let an op be added without editing a switch.
#include "lowering/lowering.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/error.hpp"
#include "lowering/compute_unit.hpp"
#include "lowering/knob_names.hpp"
#include "lowering/layout.hpp"
#include "plan_target.hpp"

namespace atvoss::lowering {
namespace {

using testing::conv_schedule;
using testing::matmul_schedule;

Workload workload(const std::string& text) { return Workload::from_json(parse_json(text, "workload")); }

using testing::small_target;

TEST(LoweringTest, MatmulPlanCountsTilesLoadsAndBytes) {
  const Workload w = workload(R"({"op":"matmul","dims":{"M":256,"N":512,"K":1024}})");
  const KernelPlan p = plan_kernel(w, small_target(), matmul_schedule(128, 128, 64, 4, 2, 0));
  ASSERT_TRUE(p.verdict.ok) << p.verdict.reason;
  ASSERT_EQ(p.tiles.size(), 1u);
  const TileWork& t = p.tiles[0];
  EXPECT_DOUBLE_EQ(t.count, 2 * 4);            // 256/128 x 512/128
  EXPECT_DOUBLE_EQ(t.loads, 1024.0 / 64 / 4);  // K steps / k_steps
  EXPECT_DOUBLE_EQ(t.steps_per_load, 4);
  EXPECT_DOUBLE_EQ(t.copies[0].bytes, 128 * 64 * 4 * 2);  // A panel of one load, fp16
  EXPECT_DOUBLE_EQ(t.cube_macs, 128 * 128 * 64);
  EXPECT_DOUBLE_EQ(held_at(p, small_target(), "L0A"), 128 * 64 * 2 * 2);  // two buffers in flight
  // Row-major walk: B is fetched again for every tile row after the first.
  EXPECT_DOUBLE_EQ(p.b.rereads, 1);
  EXPECT_DOUBLE_EQ(p.a.rereads, 0);
  EXPECT_DOUBLE_EQ(p.flops, w.flops());
}

TEST(LoweringTest, TileOrderMovesTheRereadsBetweenOperands) {
  const Workload w = workload(R"({"op":"matmul","dims":{"M":1024,"N":1024,"K":256}})");
  const KernelPlan row = plan_kernel(w, small_target(), matmul_schedule(64, 64, 64, 1, 1, 0));
  const KernelPlan col = plan_kernel(w, small_target(), matmul_schedule(64, 64, 64, 1, 1, 1));
  EXPECT_GT(row.b.rereads, 0);
  EXPECT_EQ(row.a.rereads, 0);
  EXPECT_GT(col.a.rereads, 0);
  EXPECT_EQ(col.b.rereads, 0);
  EXPECT_DOUBLE_EQ(row.operand_read_bytes, col.operand_read_bytes);
}

TEST(LoweringTest, OverflowingBufferIsRejectedWithItsName) {
  const Workload w = workload(R"({"op":"matmul","dims":{"M":1024,"N":1024,"K":1024}})");
  const KernelPlan p = plan_kernel(w, small_target(), matmul_schedule(256, 256, 256, 1, 4, 0));
  EXPECT_FALSE(p.verdict.ok);
  EXPECT_NE(p.verdict.reason.find("L0A"), std::string::npos) << p.verdict.reason;
  EXPECT_NE(p.verdict.reason.find("async_copy_depth 4"), std::string::npos);
}

TEST(LoweringTest, FractalPaddingComesFromTheTarget) {
  const Workload w = workload(R"({"op":"matmul","dims":{"M":40,"N":40,"K":64}})");
  Target t16 = small_target(), t8 = small_target();
  t8.cube_m = t8.cube_n = 8;
  const Schedule s = matmul_schedule(40, 40, 64, 1, 1, 0);
  EXPECT_DOUBLE_EQ(plan_kernel(w, t16, s).tiles[0].cube_macs, 48.0 * 48 * 64);
  EXPECT_DOUBLE_EQ(plan_kernel(w, t8, s).tiles[0].cube_macs, 40.0 * 40 * 64);
}

// K pads to the unit's k (cube_k fp16 values), not to a fixed 16: an 8x8x8 unit pads a
// K of 40 to 40, a 16x16x16 one to 48, in the MACs issued and in L0A.
TEST(LoweringTest, KPaddingComesFromTheMatrixUnit) {
  const Workload w = workload(R"({"op":"matmul","dims":{"M":40,"N":40,"K":40}})");
  Target t16 = small_target(), t8 = small_target();
  t8.cube_m = t8.cube_n = t8.cube_k = 8;
  const Schedule s = matmul_schedule(40, 40, 40, 1, 1, 0);
  const KernelPlan p16 = plan_kernel(w, t16, s), p8 = plan_kernel(w, t8, s);
  EXPECT_DOUBLE_EQ(p16.tiles[0].cube_macs, 48.0 * 48 * 48);
  EXPECT_DOUBLE_EQ(p8.tiles[0].cube_macs, 40.0 * 40 * 40);
  EXPECT_DOUBLE_EQ(held_at(p16, t16, "L0A"), 48.0 * 48 * 2);
  EXPECT_DOUBLE_EQ(held_at(p8, t8, "L0A"), 40.0 * 40 * 2);
}

// A kind of target the built-in unit does not serve plugs in its own ComputeUnit; until it
// does, lowering for it is refused by name, and the NPU organisations cannot be taken over.
class QuadUnit final : public ComputeUnit {
 public:
  double k_granule_bytes(const Target&) const override { return 8; }
  bool adds_unit_tiles() const override { return false; }
  UnitBlock block(const Workload&, const Target&, const Schedule&) const override { return {4, 4}; }
  int cores(const Schedule&, int) const override { return 3; }
  RegisterBlock registers(const Target&, const Schedule&) const override { return {4, 4, 1, 2}; }
  bool place_block(Buffers& f, KernelPlan&, const BlockShape& b, const Target&, const Schedule&) const override {
    f.accumulator = b.unit.rows * b.unit.cols * 4;
    f.staging = b.tile_m * b.tile_k * b.elem_bytes;
    return true;
  }
  // Accumulators in a register file; every other buffer in one 8 KiB SRAM.
  MemoryLevels levels(const Target&) const override {
    MemoryLevels l;
    l.at[0] = {"quad-regs", 256, 0};
    l.at[1] = {"quad-sram", 8192, 64};
    l.count = 2;
    return l;
  }
  int level_of(Buffer role) const override { return role == Buffer::accumulator ? 0 : 1; }
};

TEST(LoweringTest, ABackendsComputeUnitShapesThePlansOfItsTargets) {
  const Workload w = workload(R"({"op":"matmul","dims":{"M":30,"N":64,"K":64},"dtype":"float32"})");
  Target quad = small_target();
  quad.organisation = "test-quad";
  const Schedule s = matmul_schedule(16, 64, 64, 1, 1, 0);
  try {
    (void)plan_kernel(w, quad, s);
    FAIL() << "an organisation without a unit was lowered";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
    EXPECT_NE(std::string(e.what()).find("'test-quad'"), std::string::npos) << e.what();
  }
  register_compute_unit("test-quad", std::make_shared<QuadUnit>());
  EXPECT_THROW(register_compute_unit("test-quad", std::make_shared<QuadUnit>()), Error);
  EXPECT_THROW(register_compute_unit("coupled", std::make_shared<QuadUnit>()), Error);
  Target other = quad;
  other.organisation = "test-other";  // still has none: the lookup goes by organisation
  EXPECT_THROW((void)plan_kernel(w, other, s), Error);

  const KernelPlan p = plan_kernel(w, quad, s);
  ASSERT_TRUE(p.verdict.ok) << p.verdict.reason;
  EXPECT_EQ(p.cores, 3);
  EXPECT_DOUBLE_EQ(held_at(p, quad, "quad-regs"), 4.0 * 4 * 4);
  EXPECT_DOUBLE_EQ(held_at(p, quad, "quad-sram"), 16.0 * 64 * 4);  // tile_k 64 is whole 8-byte granules
  EXPECT_THROW((void)held_at(p, quad, "L0A"), Error);              // the NPU's names are not its
  // Its levels bound the plan, and a refusal names the level.
  const KernelPlan big = plan_kernel(w, quad, matmul_schedule(48, 64, 64, 1, 1, 0));
  EXPECT_FALSE(big.verdict.ok);
  EXPECT_EQ(big.verdict.reason.rfind("quad-sram: ", 0), 0u) << big.verdict.reason;
  ASSERT_EQ(p.tiles.size(), 2u);  // M: 16, then an edge of 14 padded to 16
  EXPECT_DOUBLE_EQ(p.tiles[1].cube_macs, 16.0 * 64 * 64);
  // The NPU's plan of the same schedule is the matrix unit's.
  const KernelPlan npu = plan_kernel(w, small_target(), s);
  EXPECT_EQ(npu.cores, small_target().ai_cores);
  EXPECT_DOUBLE_EQ(held_at(npu, small_target(), "L0A"), 16.0 * 64 * 4);
}

// A unit smaller than 16 gets tiles of its own size; the 16x16x16 space is unchanged.
TEST(LoweringTest, TileListsStartAtTheMatrixUnit) {
  const Workload w = workload(R"({"op":"matmul","dims":{"M":1024,"N":1024,"K":1024}})");
  Target t16 = small_target(), t8 = small_target();
  t8.cube_m = t8.cube_n = t8.cube_k = 8;
  auto values = [&](const Target& t, const std::string& knob) {
    for (const auto& k : knobs_for(w, t)) {
      if (k.name == knob) return k.values;
    }
    return std::vector<std::int64_t>{};
  };
  EXPECT_EQ(values(t16, "tile_m").front(), 16);
  EXPECT_EQ(values(t16, "tile_k").front(), 16);
  EXPECT_EQ(values(t8, "tile_m").front(), 8);
  EXPECT_EQ(values(t8, "tile_n").front(), 8);
  EXPECT_EQ(values(t8, "tile_k").front(), 8);
  EXPECT_EQ(values(t8, "tile_m").size(), values(t16, "tile_m").size() + 1);
}

TEST(LoweringTest, UnfusedEpilogueOpsBecomeSeparateKernels) {
  const Workload w =
      workload(R"({"op":"matmul","dims":{"M":256,"N":256,"K":256},"epilogue":["bias","batchnorm","relu"]})");
  Schedule s = matmul_schedule(64, 64, 64, 1, 2, 0);
  s.set("fusion_level", 1);
  const KernelPlan p = plan_kernel(w, small_target(), s);
  EXPECT_EQ(p.fusion.fused, std::vector<std::string>{"bias"});
  ASSERT_EQ(p.separate.size(), 2u);  // relu follows batchnorm, so it cannot fuse
  EXPECT_EQ(p.kernels(), 3);
  EXPECT_DOUBLE_EQ(p.separate[0].write_bytes, p.out_bytes);
}

Schedule window_schedule(int th, int tw, int tc) {
  return Schedule({{"tile_h", th}, {"tile_w", tw}, {"tile_c", tc}, {"async_copy_depth", 1}, {"fusion_level", 0}});
}

Schedule rows_schedule(int tm, int tn) { return Schedule({{"tile_m", tm}, {"tile_n", tn}, {"async_copy_depth", 1}}); }

TEST(LoweringTest, PoolingIsAWindowWithoutWeights) {
  const std::string dims = R"("dims":{"N":1,"C":64,"H":112,"W":112,"R":3,"S":3,"stride":2,"pad":1})";
  const Workload pool = workload(R"({"op":"max_pool2d",)" + dims + "}");
  const Workload dw = workload(R"({"op":"depthwise_conv2d",)" + dims + "}");
  const KernelPlan p = plan_kernel(pool, small_target(), window_schedule(8, 8, 64));
  const KernelPlan q = plan_kernel(dw, small_target(), window_schedule(8, 8, 64));
  ASSERT_TRUE(p.verdict.ok) << p.verdict.reason;
  EXPECT_EQ(p.tiles[0].copies[1].bytes, 0);  // no filter to load
  EXPECT_GT(q.tiles[0].copies[1].bytes, 0);
  EXPECT_DOUBLE_EQ(2 * p.tiles[0].vector_bytes, q.tiles[0].vector_bytes);  // max vs MAC
  EXPECT_EQ(pool.out_h(), 56);
  EXPECT_DOUBLE_EQ(p.out_bytes, 64.0 * 56 * 56 * 2);
  EXPECT_DOUBLE_EQ(pool.flops(), 64.0 * 56 * 56 * 9);
}

TEST(LoweringTest, GroupedConvIsGroupsSmallConvsEachWithItsWeights) {
  const std::string dims = R"("N":1,"C":64,"H":28,"W":28,"K":128,"R":3,"S":3,"pad":1)";
  const Workload g = workload(R"({"op":"group_conv2d","dims":{)" + dims + R"(,"groups":4}})");
  const Workload one = workload(R"({"op":"conv2d","dims":{"N":1,"C":16,"H":28,"W":28,"K":32,"R":3,"S":3,"pad":1}})");
  EXPECT_DOUBLE_EQ(g.flops(), 4 * one.flops());
  const auto knobs = knobs_for(g, small_target());
  EXPECT_EQ(knobs[2].name, "tile_n");
  EXPECT_EQ(knobs[2].values.back(), 32);  // K per group
  const Schedule s({{"tile_h", 28},
                    {"tile_w", 28},
                    {"tile_n", 32},
                    {"tile_k", 144},
                    {"k_steps", 1},
                    {"async_copy_depth", 1},
                    {"tile_order", 0},
                    {"fusion_level", 0}});
  const KernelPlan pg = plan_kernel(g, small_target(), s);
  const KernelPlan p1 = plan_kernel(one, small_target(), s);
  ASSERT_TRUE(pg.verdict.ok) << pg.verdict.reason;
  EXPECT_DOUBLE_EQ(pg.tile_count(), 4 * p1.tile_count());
  EXPECT_DOUBLE_EQ(pg.b.unique_bytes, 4 * p1.b.unique_bytes);
  EXPECT_DOUBLE_EQ(pg.out_bytes, 4 * p1.out_bytes);
  EXPECT_THROW(workload(R"({"op":"group_conv2d","dims":{)" + dims + R"(,"groups":3}})"), Error);
}

TEST(LoweringTest, LayoutKnobSetsTheActivationRowsAndTheReformat) {
  const Workload w = workload(R"({"op":"conv2d","dims":{"N":1,"C":128,"H":28,"W":28,"K":128,"R":3,"S":3,"pad":1}})");
  const auto knobs = knobs_for(w, small_target());
  EXPECT_EQ(knobs.back().name, "layout");
  EXPECT_EQ(knobs.back().values, (std::vector<std::int64_t>{0, 1, 2}));
  const KernelPlan fractal = plan_kernel(w, small_target(), conv_schedule(0));
  const KernelPlan nhwc = plan_kernel(w, small_target(), conv_schedule(1));
  const KernelPlan nchw = plan_kernel(w, small_target(), conv_schedule(2));
  ASSERT_TRUE(fractal.verdict.ok && nhwc.verdict.ok && nchw.verdict.ok) << fractal.verdict.reason;
  const double in_w = 14 + 2;                                             // the halo of a 14-wide tile of a 3x3 window
  EXPECT_DOUBLE_EQ(fractal.tiles[0].copies[0].segment_bytes, in_w * 32);  // one C0 block's row
  EXPECT_DOUBLE_EQ(nhwc.tiles[0].copies[0].segment_bytes, 128.0 / 18 * 2);            // a pixel's channels of one load
  EXPECT_DOUBLE_EQ(nchw.tiles[0].copies[0].segment_bytes, in_w * 2);                  // one channel's row
  EXPECT_DOUBLE_EQ(fractal.tiles[0].copies[0].bytes, nchw.tiles[0].copies[0].bytes);  // same data
  EXPECT_EQ(fractal.tiles[0].vector_bytes, 0);
  EXPECT_GT(nchw.tiles[0].vector_bytes, 0);  // transposed to the fractal in UB
  EXPECT_EQ(fractal.tiles[0].store_segment_bytes, 0);
  EXPECT_DOUBLE_EQ(nhwc.tiles[0].store_segment_bytes, 64 * 2);  // tile_n of K channels per pixel
  EXPECT_DOUBLE_EQ(nchw.tiles[0].store_segment_bytes, 14 * 2);
}

TEST(LoweringTest, AScheduleStoredBeforeTheLayoutKnobTakesTheFractal) {
  const Workload w = workload(R"({"op":"conv2d","dims":{"N":1,"C":64,"H":28,"W":28,"K":64,"R":3,"S":3,"pad":1}})");
  std::map<std::string, std::int64_t> values = conv_schedule(0, 28, 28).values();
  values.erase("layout");
  const Schedule old(values);
  const ScheduleSpace space = space_for(w, small_target());
  ASSERT_TRUE(space.check(old).ok) << space.check(old).reason;
  ASSERT_TRUE(space.point_of(old));
  EXPECT_EQ(space.point_of(old), space.point_of(conv_schedule(0, 28, 28)));
  EXPECT_EQ(layout_of(w, old), Layout::fractal);
  EXPECT_DOUBLE_EQ(plan_kernel(w, small_target(), old).tiles[0].copies[0].segment_bytes,
                   plan_kernel(w, small_target(), conv_schedule(0, 28, 28)).tiles[0].copies[0].segment_bytes);
  EXPECT_EQ(default_schedule(w, small_target()).at("layout"), 0);
}

// On a split part the cube core has no UB: a fused epilogue's input tile is parked in a GM
// workspace that the vector cores read back; a coupled core keeps it on chip.
TEST(LoweringTest, ASplitPartsFusedEpilogueGoesThroughAWorkspace) {
  const Workload w = workload(R"({"op":"matmul","dims":{"M":256,"N":256,"K":256},"epilogue":["bias","relu"]})");
  const Schedule s = matmul_schedule(128, 128, 64, 2, 2, 0, 2);
  Target split = small_target();
  split.organisation = "split";
  EXPECT_DOUBLE_EQ(plan_kernel(w, split, s).tiles[0].workspace_bytes, 128 * 128 * 2);
  EXPECT_DOUBLE_EQ(plan_kernel(w, small_target(), s).tiles[0].workspace_bytes, 0);
}

// A conv's weight gradient: K (batch x pixels) far longer than the filter it produces.
TEST(LoweringTest, AWeightGradientSplitsItsReductionOverCores) {
  const Workload wgrad = workload(R"({"op":"matmul","dims":{"M":256,"N":64,"K":802816}})");
  const ScheduleSpace space = space_for(wgrad, small_target());
  const auto& knobs = space.knobs();
  const auto split = std::find_if(knobs.begin(), knobs.end(), [](const Knob& k) { return k.name == knobs::split_k; });
  ASSERT_NE(split, knobs.end());
  EXPECT_EQ(split->values.front(), 1);
  EXPECT_EQ(split->values.back(), 64);
  std::map<std::string, std::int64_t> values = matmul_schedule(128, 64, 64, 4, 2, 0).values();
  const Schedule whole(values);
  values["split_k"] = 8;
  const KernelPlan one = plan_kernel(wgrad, small_target(), whole);
  const KernelPlan eight = plan_kernel(wgrad, small_target(), Schedule(values));
  ASSERT_TRUE(eight.verdict.ok) << eight.verdict.reason;
  EXPECT_DOUBLE_EQ(eight.tile_count(), 8 * one.tile_count());
  EXPECT_DOUBLE_EQ(eight.tiles[0].loads * 8, one.tiles[0].loads);
  // Each part adds fp32 partial sums into the output, which is zeroed first.
  EXPECT_DOUBLE_EQ(one.out_bytes, 256.0 * 64 * 2);
  EXPECT_DOUBLE_EQ(eight.out_bytes, 256.0 * 64 * 4 * 9);
  // A schedule stored before the knob ran unsplit.
  values["split_k"] = 1;
  ASSERT_TRUE(space.point_of(whole));
  EXPECT_EQ(space.point_of(whole), space.point_of(Schedule(values)));
  // The vendor default fills the cores: 2 output tiles x 2 parts on the 4-core target.
  EXPECT_EQ(default_schedule(wgrad, small_target()).at("split_k"), small_target().ai_cores / 2);
  // Matmuls whose output fills the cores, or that fuse an epilogue, keep their space.
  for (const char* text : {R"({"op":"matmul","dims":{"M":128,"N":768,"K":3072}})",
                           R"({"op":"matmul","dims":{"M":256,"N":64,"K":802816},"epilogue":["bias"]})"}) {
    const ScheduleSpace other = space_for(workload(text), small_target());
    for (const Knob& k : other.knobs()) EXPECT_NE(k.name, knobs::split_k) << text;
  }
}

TEST(LoweringTest, LayoutChangeIsATransposeOfTheConvInput) {
  const Workload w = workload(R"({"op":"conv2d","dims":{"N":1,"C":40,"H":8,"W":8,"K":64,"R":3,"S":3,"pad":1}})");
  EXPECT_FALSE(layout_change(w, Layout::nhwc, Layout::nhwc));
  const Workload to_nhwc = *layout_change(w, Layout::nchw, Layout::nhwc);
  EXPECT_EQ(to_nhwc.op(), "transpose");
  EXPECT_EQ(to_nhwc.dim("M"), 40);  // [C, HW] -> [HW, C]
  EXPECT_EQ(to_nhwc.dim("N"), 64);
  EXPECT_EQ(to_nhwc.dim("inner"), 1);
  const Workload to_fractal = *layout_change(w, Layout::nhwc, Layout::fractal);
  EXPECT_EQ(to_fractal.dim("M"), 64);  // [HW, C1, C0] -> [C1, HW, C0], C padded to 48
  EXPECT_EQ(to_fractal.dim("N"), 48);
  EXPECT_EQ(to_fractal.dim("inner"), 16);
  const Workload from_fractal = *layout_change(w, Layout::fractal, Layout::nhwc);
  EXPECT_EQ(from_fractal.dim("M"), 3);
  EXPECT_EQ(from_fractal.dim("N"), 64 * 16);
  EXPECT_EQ(from_fractal.dim("inner"), 16);
  EXPECT_FALSE(has_layout_knob(workload(R"({"op":"matmul","dims":{"M":64,"N":64,"K":64}})")));
}

TEST(LoweringTest, ReduceWritesOneValuePerRow) {
  const Workload w = workload(R"({"op":"global_avg_pool","dims":{"M":2048,"N":49}})");
  const KernelPlan p = plan_kernel(w, small_target(), rows_schedule(64, 49));
  ASSERT_TRUE(p.verdict.ok) << p.verdict.reason;
  double stored = 0;
  for (const auto& t : p.tiles) stored += t.count * t.store_bytes;
  EXPECT_DOUBLE_EQ(stored, 2048 * 2);
  EXPECT_DOUBLE_EQ(p.out_bytes, 2048 * 2);
  EXPECT_DOUBLE_EQ(w.compulsory_bytes(), (2048.0 * 49 + 2048) * 2);
}

TEST(LoweringTest, TransposeStoresRowsOfTileM) {
  const Workload w = workload(R"({"op":"transpose","dims":{"M":256,"N":1024,"inner":1}})");
  const KernelPlan p = plan_kernel(w, small_target(), rows_schedule(8, 256));
  ASSERT_TRUE(p.verdict.ok) << p.verdict.reason;
  EXPECT_DOUBLE_EQ(p.tiles[0].store_segment_bytes, 8 * 2);
  // Heads of 64 elements move together: each store row is tile_m heads' rows long.
  const Workload heads = workload(R"({"op":"transpose","dims":{"M":128,"N":768,"inner":64}})");
  EXPECT_DOUBLE_EQ(plan_kernel(heads, small_target(), rows_schedule(8, 256)).tiles[0].store_segment_bytes, 8 * 64 * 2);
  EXPECT_FALSE(plan_kernel(heads, small_target(), rows_schedule(8, 32)).verdict.ok);  // splits a head
  const Workload copy = workload(R"({"op":"concat","dims":{"M":256,"N":1024}})");
  EXPECT_DOUBLE_EQ(plan_kernel(copy, small_target(), rows_schedule(8, 256)).tiles[0].store_segment_bytes, 0);
}

TEST(LoweringTest, UpsampleWritesScaleSquaredTimesItsInput) {
  const Workload w = workload(R"({"op":"upsample","dims":{"M":64,"N":20,"scale":2}})");
  const KernelPlan p = plan_kernel(w, small_target(), rows_schedule(64, 20));
  ASSERT_TRUE(p.verdict.ok) << p.verdict.reason;
  EXPECT_DOUBLE_EQ(p.tiles[0].store_bytes, 64 * 20 * 4 * 2);
  EXPECT_DOUBLE_EQ(p.tiles[0].load_bytes(), 64 * 20 * 2);
}

TEST(LoweringTest, RowOpEpilogueRunsInTheSamePass) {
  const Workload plain = workload(R"({"op":"elementwise","dims":{"M":256,"N":1024}})");
  const Workload fused = workload(R"({"op":"elementwise","dims":{"M":256,"N":1024},"epilogue":["relu"]})");
  const Workload silu = workload(R"({"op":"map","dims":{"M":256,"N":1024},"epilogue":["silu"]})");
  const auto s = rows_schedule(8, 1024);
  EXPECT_EQ(space_for(fused, small_target()).knobs().size(), 3u);  // no fusion_level knob
  const KernelPlan p = plan_kernel(fused, small_target(), s);
  EXPECT_EQ(p.kernels(), 1);
  EXPECT_EQ(plan_kernel(plain, small_target(), s).tiles[0].epilogue_bytes, 0);
  EXPECT_DOUBLE_EQ(p.tiles[0].epilogue_bytes, 8 * 1024 * 2);  // one op per element
  EXPECT_DOUBLE_EQ(plan_kernel(silu, small_target(), s).tiles[0].epilogue_bytes, 5 * 8 * 1024 * 2);
}

TEST(LoweringTest, FusedAttentionStreamsKeysInSequenceTiles) {
  const Workload w = workload(R"({"op":"attention","dims":{"B":8,"S":512,"L":1024,"D":64}})");
  const auto knobs = knobs_for(w, small_target());
  ASSERT_EQ(knobs.size(), 3u);
  EXPECT_EQ(knobs[1].name, "tile_n");  // the sequence tile
  const Schedule s({{"tile_m", 64}, {"tile_n", 128}, {"async_copy_depth", 1}});
  const KernelPlan p = plan_kernel(w, small_target(), s);
  ASSERT_TRUE(p.verdict.ok) << p.verdict.reason;
  EXPECT_DOUBLE_EQ(p.tile_count(), 8 * 512 / 64);
  EXPECT_DOUBLE_EQ(p.tiles[0].loads, 1024 / 128);
  EXPECT_DOUBLE_EQ(p.tiles[0].cube_macs * p.tiles[0].loads, 2.0 * 64 * 1024 * 64);  // QK^T and PV
  EXPECT_DOUBLE_EQ(p.b.rereads, 512 / 64 - 1);                                      // K and V again per query tile
  // Only Q, K, V and the output touch GM: no S x L scores.
  EXPECT_DOUBLE_EQ(p.out_bytes, 8.0 * 512 * 64 * 2);
  EXPECT_DOUBLE_EQ(w.flops(), 4.0 * 8 * 512 * 1024 * 64);
  const Schedule big({{"tile_m", 256}, {"tile_n", 1024}, {"async_copy_depth", 1}});
  EXPECT_FALSE(plan_kernel(w, small_target(), big).verdict.ok);
}

// An op outside the built-in families: registered with core and lowering, no switch edited.
class ScanLowering final : public OpLowering {
 public:
  std::vector<Knob> knobs(const Workload&, const Target&) const override {
    return {{std::string(knobs::tile_n), {32, 64}}};
  }
  KernelPlan plan(const Workload& w, const Target&, const Schedule& s) const override {
    KernelPlan p;
    p.family = OpFamily::rows;
    p.uses_cube = false;
    TileWork t;
    t.count = double(w.dim("N")) / double(s.at("tile_n"));
    p.tiles.push_back(t);
    return p;
  }
};

TEST(LoweringTest, RegisteredOpLowersWithoutEditingASwitch) {
  OpInfo scan;
  scan.name = "prefix_scan_test";
  scan.family = OpFamily::custom;  // no built-in template
  scan.dims = {"N"};
  register_op(scan);
  const Workload w = workload(R"({"op":"prefix_scan_test","dims":{"N":1024}})");
  EXPECT_FALSE(can_lower(w));
  register_lowering("prefix_scan_test", std::make_shared<ScanLowering>());
  EXPECT_TRUE(can_lower(w));
  EXPECT_EQ(space_for(w, small_target()).size(), 2u);
  EXPECT_DOUBLE_EQ(plan_kernel(w, small_target(), Schedule({{"tile_n", 64}})).tiles[0].count, 16);
  EXPECT_THROW(register_lowering("prefix_scan_test", std::make_shared<ScanLowering>()), Error);
}

}  // namespace
}  // namespace atvoss::lowering
