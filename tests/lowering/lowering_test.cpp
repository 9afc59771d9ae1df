// Lowering: the plan is structure only — bytes, trip counts and footprints that follow
// the knobs — and the registries let an op be added without editing a switch.
#include "lowering/lowering.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::lowering {
namespace {

Workload workload(const std::string& text) { return Workload::from_json(parse_json(text, "workload")); }

Target small_target() {
  Target t;
  t.name = "plan-test";
  t.ai_cores = 4;
  t.vector_cores = 4;
  t.l0a_bytes = t.l0b_bytes = 64 * 1024;
  t.l0c_bytes = 256 * 1024;
  t.l1_bytes = 1024 * 1024;
  t.ub_bytes = 256 * 1024;
  t.l2_bytes = 8 * 1024 * 1024;
  t.fixpipe_bytes_per_cycle = 64;
  return t;
}

Schedule matmul_schedule(int tm, int tn, int tk, int ks, int depth, int order) {
  return Schedule({{"tile_m", tm}, {"tile_n", tn}, {"tile_k", tk}, {"k_steps", ks},
                   {"async_copy_depth", depth}, {"tile_order", order}, {"fusion_level", 0}});
}

TEST(LoweringTest, MatmulPlanCountsTilesLoadsAndBytes) {
  const Workload w = workload(R"({"op":"matmul","dims":{"M":256,"N":512,"K":1024}})");
  const KernelPlan p = plan_kernel(w, small_target(), matmul_schedule(128, 128, 64, 4, 2, 0));
  ASSERT_TRUE(p.verdict.ok) << p.verdict.reason;
  ASSERT_EQ(p.tiles.size(), 1u);
  const TileWork& t = p.tiles[0];
  EXPECT_DOUBLE_EQ(t.count, 2 * 4);           // 256/128 x 512/128
  EXPECT_DOUBLE_EQ(t.loads, 1024.0 / 64 / 4);  // K steps / k_steps
  EXPECT_DOUBLE_EQ(t.steps_per_load, 4);
  EXPECT_DOUBLE_EQ(t.copies[0].bytes, 128 * 64 * 4 * 2);  // A panel of one load, fp16
  EXPECT_DOUBLE_EQ(t.cube_macs, 128 * 128 * 64);
  EXPECT_DOUBLE_EQ(p.footprint.l0a, 128 * 64 * 2 * 2);  // two buffers in flight
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

TEST(LoweringTest, UnfusedEpilogueOpsBecomeSeparateKernels) {
  const Workload w = workload(
      R"({"op":"matmul","dims":{"M":256,"N":256,"K":256},"epilogue":["bias","batchnorm","relu"]})");
  Schedule s = matmul_schedule(64, 64, 64, 1, 2, 0);
  s.set("fusion_level", 1);
  const KernelPlan p = plan_kernel(w, small_target(), s);
  EXPECT_EQ(p.fusion.fused, std::vector<std::string>{"bias"});
  ASSERT_EQ(p.separate.size(), 2u);  // relu follows batchnorm, so it cannot fuse
  EXPECT_EQ(p.kernels(), 3);
  EXPECT_DOUBLE_EQ(p.separate[0].write_bytes, p.out_bytes);
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
