// Generated kernels are correct over a table of schedules (edges included), each checked by
// the runner against the reference; a kernel that computes wrong is caught as wrong_answer.
#include "host/codegen.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "host/host_space.hpp"
#include "host/kernel_abi.hpp"
#include "host/knob_values.hpp"
#include "host/measure.hpp"
#include "host_test_util.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

using testing::expect_every_case_computes_the_reference;
using testing::ScheduleCase;
using testing::TempDir;
using testing::workload;

// Shapes that are not multiples of any block, blocks larger than the dims, every tile_order,
// every fusion level, every micro shape, both unroll and prefetch settings, operands packed and
// read in place, and two threads in every tile_order (one mc block and several; capped at the
// machine's cores).
const std::vector<ScheduleCase> kCases = {
    {R"({"op":"matmul","dtype":"float32","dims":{"M":13,"N":37,"K":29}})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_order", 0}, {"threads", 2}}},
    // BERT's FFN: the erf GELU, inputs over [-4, 4] after the product (both of its branches).
    {R"({"op":"matmul","dtype":"float32","dims":{"M":13,"N":37,"K":29},"epilogue":["bias","gelu_erf"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_order", 0}, {"fusion_level", 1}}},
    // A PRelu's per-column slopes (leaky_relu), fused and in a pass of its own, with a mish.
    {R"({"op":"matmul","dtype":"float32","dims":{"M":13,"N":37,"K":29},"epilogue":["bias","leaky_relu","mish"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_order", 0}, {"fusion_level", 1}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":13,"N":37,"K":29},"epilogue":["bias","leaky_relu","mish"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_order", 0}, {"fusion_level", 0}}},
    // MobileNetV3's squeeze-and-excite gate: torch's Hardsigmoid, in the kernel and in a pass.
    {R"({"op":"matmul","dtype":"float32","dims":{"M":13,"N":37,"K":29},"epilogue":["bias","hardsigmoid"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_order", 0}, {"fusion_level", 1}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":13,"N":37,"K":29},"epilogue":["bias","hardsigmoid"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_order", 0}, {"fusion_level", 0}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":50,"N":70,"K":130},"epilogue":["bias","gelu"]})",
     {{"micro_m", 4},
      {"micro_n", 24},
      {"tile_m", 48},
      {"tile_n", 256},
      {"tile_k", 64},
      {"tile_order", 1},
      {"fusion_level", 1},
      {"k_steps", 1},
      {"async_copy_depth", 2},
      {"threads", 2}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":50,"N":70,"K":130},"epilogue":["bias","gelu"]})",
     {{"micro_m", 8},
      {"micro_n", 8},
      {"tile_m", 48},
      {"tile_k", 64},
      {"tile_order", 2},
      {"fusion_level", 0},
      {"threads", 2}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":33,"N":41,"K":300},"epilogue":["batchnorm","relu","add"]})",
     {{"micro_m", 4}, {"micro_n", 8}, {"tile_k", 128}, {"fusion_level", 2}, {"tile_order", 2}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":33,"N":41,"K":300},"epilogue":["bias","relu","add"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_k", 64}, {"fusion_level", 0}, {"tile_order", 1}}},
    // Four mc blocks over two threads, each packing its own A block while the other computes.
    {R"({"op":"matmul","dtype":"float32","dims":{"M":197,"N":80,"K":256},"epilogue":["bias"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_m", 48}, {"tile_k", 256}, {"tile_order", 0}, {"threads", 2}}},
    {R"({"op":"batch_matmul","dtype":"float32","dims":{"B":3,"M":17,"N":24,"K":40},"epilogue":["add"]})",
     {{"micro_m", 6}, {"micro_n", 8}, {"fusion_level", 2}, {"async_copy_depth", 2}, {"k_steps", 1}, {"threads", 2}}},
    // One column panel: two threads cut the rows, the cut inside an mc block, in both loop orders.
    {R"({"op":"matmul","dtype":"float32","dims":{"M":197,"N":16,"K":70},"epilogue":["bias","add"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_m", 48}, {"tile_k", 64}, {"tile_order", 0}, {"threads", 2}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":197,"N":16,"K":70},"epilogue":["bias","add"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_m", 48}, {"tile_k", 64}, {"tile_order", 1}, {"threads", 2}}},
    // A and B read in place (async_copy_depth 0): partial row tiles (their missing rows repeat the
    // last) and partial column panels (B's rows read only nr wide), several k blocks, every order.
    {R"({"op":"matmul","dtype":"float32","dims":{"M":50,"N":70,"K":130},"epilogue":["bias","gelu"]})",
     {{"micro_m", 6},
      {"micro_n", 16},
      {"tile_k", 64},
      {"tile_order", 0},
      {"fusion_level", 1},
      {"async_copy_depth", 0},
      {"threads", 2}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":50,"N":70,"K":130},"epilogue":["bias","gelu"]})",
     {{"micro_m", 8}, {"micro_n", 24}, {"tile_m", 48}, {"tile_k", 64}, {"tile_order", 1}, {"async_copy_depth", 0}}},
    {R"({"op":"batch_matmul","dtype":"float32","dims":{"B":3,"M":17,"N":24,"K":40},"epilogue":["add"]})",
     {{"micro_m", 4},
      {"micro_n", 16},
      {"fusion_level", 2},
      {"tile_order", 2},
      {"async_copy_depth", 0},
      {"threads", 2}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":197,"N":80,"K":256},"epilogue":["bias"]})",
     {{"micro_m", 8}, {"micro_n", 16}, {"tile_m", 48}, {"tile_k", 128}, {"tile_order", 2}, {"async_copy_depth", 0}}},
};

TEST(CodegenTest, EveryScheduleInTheTableComputesTheReference) { expect_every_case_computes_the_reference(kCases, 7); }

// Threads cut C into whole micro-tiles: the grid whose largest part has the fewest (within
// 3 %), then the one reading the least of A and B, columns first among equals, and rows where
// there are too few columns to share.
TEST(CodegenTest, ThreadsCutTheOutputIntoTheEvenestGrid) {
  auto grid = [](long m, long n, long mr, long nr, long threads) {
    const ThreadGrid g = thread_grid(m, n, mr, nr, threads);
    return std::pair{g.rows, g.cols};
  };
  EXPECT_EQ(grid(1024, 1024, 6, 32, 2), std::pair(1L, 2L));  // 171 x 16 tiles each against 86 x 32
  EXPECT_EQ(grid(128, 3072, 6, 32, 2), std::pair(1L, 2L));   // 22 x 48 either way: columns
  EXPECT_EQ(grid(197, 16, 6, 16, 2), std::pair(2L, 1L));     // one column panel
  EXPECT_EQ(grid(1024, 96, 6, 32, 2), std::pair(2L, 1L));    // 3 panels: 171 x 2 against 86 x 3
  EXPECT_EQ(grid(1024, 1024, 6, 32, 4), std::pair(2L, 2L));  // 86 x 16 each reads half of A and B
  EXPECT_EQ(grid(4225, 128, 6, 32, 2), std::pair(2L, 1L));   // 353 x 4 against 705 x 2: A read once
  EXPECT_EQ(grid(4225, 512, 6, 32, 2), std::pair(2L, 1L));
  EXPECT_EQ(grid(512, 4225, 6, 32, 2), std::pair(1L, 2L));  // B the larger: cut by columns
  EXPECT_EQ(grid(60, 320, 6, 32, 4), std::pair(2L, 2L));    // 5 x 5 against 10 x 3 and 3 x 10
  EXPECT_EQ(grid(64, 64, 6, 16, 1), std::pair(1L, 1L));
  EXPECT_EQ(grid(64, 64, 6, 16, 0), std::pair(1L, 1L));  // no threads is one
}

TEST(CodegenTest, EveryKnobChangesTheSource) {
  testing::expect_every_knob_changes_the_source(
      workload(R"({"op":"matmul","dtype":"float32","dims":{"M":512,"N":512,"K":512},"epilogue":["bias"]})"));
}

TEST(CodegenTest, AKernelThatComputesWrongIsAWrongAnswer) {
  const Workload w = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":20,"N":20,"K":20}})");
  std::string src = generate_source(w, default_schedule(w, this_machine()), this_machine());
  const std::string fma = "acc[r][v] += av * bv[v];";
  ASSERT_NE(src.find(fma), std::string::npos);
  src.replace(src.find(fma), fma.size(), "acc[r][v] += av * bv[v] * 1.001f;");
  const Measurement m = testing::measure_source(w, src);
  EXPECT_EQ(m.status, Status::wrong_answer) << m.message;
}

TEST(HostSpaceTest, RegisterAndCacheLimitsRejectWithReasons) {
  const Workload w = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":512,"N":512,"K":512}})");
  const MachineInfo m = testing::avx2_machine();
  const ScheduleSpace space = space_for(w, m);
  EXPECT_LT(space.size(), 10000u * space.knobs().back().values.size());  // x the thread counts
  Schedule s = default_schedule(w, m);
  EXPECT_TRUE(space.check(s).ok);
  s.set("micro_m", 8);
  s.set("micro_n", 3 * m.lanes());
  const Verdict v = space.check(s);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("registers"), std::string::npos) << v.reason;
  s = default_schedule(w, m);
  s.set("tile_k", 512);
  s.set("micro_m", 4);
  s.set("micro_n", 3 * m.lanes());
  EXPECT_NE(space.check(s).reason.find("L1d"), std::string::npos) << space.check(s).reason;
  s.set("async_copy_depth", 0);  // in place: B's panel streams from L2, and no A block is kept
  EXPECT_TRUE(space.check(s).ok) << space.check(s).reason;
}

// Operands in place take a kc as deep as K (4096): their B panel and A rows are bound by L2,
// not L1d.
TEST(HostSpaceTest, OperandsInPlaceTakeADeepKBlockThatL2Holds) {
  const Workload w = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":128,"N":768,"K":4096}})");
  MachineInfo m = testing::avx2_machine();  // L1d 32 KiB, L2 512 KiB
  const ScheduleSpace space = space_for(w, m);
  Schedule s = default_schedule(w, m);
  s.set("tile_k", 4096);
  s.set("micro_m", 4);
  s.set("micro_n", 2 * m.lanes());  // 4096 x (16 + 4) floats: 320 KiB
  EXPECT_NE(space.check(s).reason.find("L1d"), std::string::npos) << space.check(s).reason;
  s.set("async_copy_depth", 0);
  EXPECT_TRUE(space.check(s).ok) << space.check(s).reason;
  m.l2_bytes = 256 << 10;
  const Verdict small_l2 = space_for(w, m).check(s);
  EXPECT_NE(small_l2.reason.find("L2: B panel and A rows in place"), std::string::npos) << small_l2.reason;
  // A kc past K is K: 4096 on a K of 3000 is one block of 3000 rows (234 KiB; 4096 would be 320).
  const Workload shallow = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":128,"N":768,"K":3000}})");
  EXPECT_TRUE(space_for(shallow, m).check(s).ok) << space_for(shallow, m).check(s).reason;
}

// 32 registers hold the 8 x 3-vector block that spills on AVX2.
TEST(HostSpaceTest, RegisterLimitFollowsTheMachine) {
  const Workload w = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":512,"N":512,"K":512}})");
  const MachineInfo m = testing::avx512_machine();
  Schedule s = default_schedule(w, m);
  s.set("micro_m", 8);
  s.set("micro_n", 3 * m.lanes());
  s.set("tile_k", 128);
  const Verdict v = space_for(w, m).check(s);
  EXPECT_TRUE(v.ok) << v.reason;
}

// A machine whose caches were not found keeps small defaults (256 KiB L2, no L3): the default
// schedule then takes the deepest and widest blocks that fit instead of failing.
// Defaults walk a block's micro-tiles along C's rows (docs/decisions/host-default-order.md), in
// every dtype of the dot-product kernels.
TEST(HostSpaceTest, TheDefaultWalksMicroTilesAlongTheRows) {
  // AMX tiles keep order 0 (host-amx-default.md): the dot-product kernels are the ones here.
  MachineInfo m = testing::without_amx(this_machine());
  m.simd_flags.push_back("avx512_vnni");
  m.simd_flags.push_back("avx512_bf16");
  const char* dims = R"("dims":{"M":1024,"N":1024,"K":1024}})";
  EXPECT_EQ(default_schedule(workload(std::string(R"({"op":"matmul","dtype":"float32",)") + dims), m).at("tile_order"),
            2);
  EXPECT_EQ(default_schedule(workload(std::string(R"({"op":"matmul","dtype":"int8",)") + dims), m).at("tile_order"), 2);
  EXPECT_EQ(default_schedule(workload(std::string(R"({"op":"matmul","dtype":"bfloat16",)") + dims), m).at("tile_order"),
            2);
}

TEST(HostSpaceTest, DefaultScheduleFitsSmallCaches) {
  const Workload w = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":768,"N":768,"K":768}})");
  MachineInfo m = testing::avx512_machine();
  m.l1d_bytes = 32 << 10;
  m.l2_bytes = 256 << 10;
  m.l3_bytes = 0;
  const Schedule s = default_schedule(w, m);
  EXPECT_TRUE(space_for(w, m).check(s).ok) << space_for(w, m).check(s).reason;
  EXPECT_LE(s.at("tile_k") * s.at("tile_n") * 4, m.l2_bytes) << s.to_json().dump();
  EXPECT_EQ(s.at("micro_m"), 6);  // the preferred register block survives; only the blocks shrink
}

TEST(HostSpaceTest, RefusesWhatItCannotGenerate) {
  std::string why;
  EXPECT_FALSE(supports(workload(R"({"op":"matmul","dims":{"M":8,"N":8,"K":8}})"), &why));  // fp16 default
  EXPECT_NE(why.find("dtype"), std::string::npos);
  EXPECT_FALSE(supports(
      workload(R"({"op":"matmul","dtype":"float32","dims":{"M":8,"N":8,"K":8},"epilogue":["layernorm"]})"), &why));
  EXPECT_NE(why.find("layernorm"), std::string::npos);
  EXPECT_THROW(space_for(workload(R"({"op":"matmul","dims":{"M":8,"N":8,"K":8}})"), this_machine()), Error);
}

}  // namespace
// Walked along the rows, the default re-reads its kc x nc block of B for every row of
// micro-tiles: the block stays in L2 (docs/decisions/host-default-b-block-in-l2.md), however
// large L3 is.
TEST(HostSpaceTest, TheDefaultKeepsItsBBlockInL2) {
  MachineInfo m = testing::avx512_machine();
  m.l2_bytes = 2 << 20;
  m.l3_bytes = std::int64_t(480) << 20;
  const Workload w = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":128,"N":3072,"K":768}})");
  const Schedule s = default_schedule(w, m);
  EXPECT_TRUE(space_for(w, m).check(s).ok) << space_for(w, m).check(s).reason;
  EXPECT_LE(std::min<std::int64_t>(s.at("tile_k"), 768) * s.at("tile_n") * 4, m.l2_bytes) << s.to_json().dump();
  EXPECT_EQ(s.at("tile_n"), 1024);
  EXPECT_EQ(s.at("tile_k"), 256);  // kc stays: only nc narrows
}

}  // namespace atvoss::host

namespace atvoss::host {
namespace {

// An fp32 matmul of at most 256 columns reads its operands in place by default
// (docs/decisions/host-default-in-place.md); wider ones, and int8 and bf16 ones, pack.
TEST(HostSpaceTest, TheDefaultReadsNarrowFp32OperandsInPlace) {
  MachineInfo m = testing::without_amx(testing::avx512_machine());
  m.simd_flags.push_back("avx512_vnni");
  const auto depth = [&](const char* dtype, int n, const char* op = "matmul") {
    const std::string batch = std::string(op) == "batch_matmul" ? R"("B":12,)" : "";
    const Workload w = workload(std::string(R"({"op":")") + op + R"(","dtype":")" + dtype + R"(","dims":{)" + batch +
                                R"("M":4225,"N":)" + std::to_string(n) + R"(,"K":4608}})");
    const Schedule s = default_schedule(w, m);
    EXPECT_TRUE(space_for(w, m).check(s).ok) << space_for(w, m).check(s).reason;
    return s.at("async_copy_depth");
  };
  EXPECT_EQ(depth("float32", 128), 0);
  EXPECT_EQ(depth("float32", 256), 0);
  EXPECT_EQ(depth("float32", 64, "batch_matmul"), 0);
  EXPECT_EQ(depth("float32", 257), 1);
  EXPECT_EQ(depth("float32", 1024), 1);
  EXPECT_EQ(depth("int8", 128), 1);
}

}  // namespace
}  // namespace atvoss::host
