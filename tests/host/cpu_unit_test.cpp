// The CPU's compute unit (host/cpu_unit.hpp): the shared lowering templates plan a host
// target's kernels through it — register-block padding, BLIS's cache blocks, threads.
#include "host/cpu_unit.hpp"

#include <gtest/gtest.h>

#include "../lowering/plan_target.hpp"
#include "core/error.hpp"
#include "host_test_util.hpp"
#include "lowering/compute_unit.hpp"
#include "lowering/lowering.hpp"

namespace atvoss::host {
namespace {

using lowering::testing::matmul_schedule;

using lowering::held_at;
using lowering::KernelPlan;
using lowering::knobs_for;
using lowering::plan_kernel;
using lowering::testing::small_target;
using testing::workload;

// On a CPU target the micro-kernel's register block (host/host_space.hpp) is the unit tiles
// are padded to, the footprint is BLIS's at the CPU's levels (the register block in
// registers, both micro-panels in L1d, the A block in L2, the B panel in L3), and threads
// bound the cores; an NPU target ignores the host knobs.
TEST(CpuUnitTest, RegisterBlockPadsTilesAndSetsTheFootprint) {
  const Workload w = workload(R"({"op":"matmul","dims":{"M":100,"N":768,"K":256},"dtype":"float32"})");
  Target cpu = small_target();
  cpu.organisation = "cpu";
  cpu.cube_m = 16;  // fp32 lanes of AVX-512
  cpu.cube_n = cpu.cube_k = 1;
  Schedule s = matmul_schedule(48, 256, 64, 1, 2, 0);
  s.set("micro_m", 6);
  s.set("micro_n", 48);
  s.set("threads", 1);
  const KernelPlan p = plan_kernel(w, cpu, s);
  ASSERT_TRUE(p.verdict.ok) << p.verdict.reason;
  EXPECT_EQ(p.cores, 1);
  EXPECT_DOUBLE_EQ(p.registers.accumulators, 6 * 3);        // 48 columns: three 16-lane vectors
  EXPECT_DOUBLE_EQ(p.registers.loads, 3 + 6);               // a row of B vectors, a broadcast per row
  ASSERT_EQ(p.tiles.size(), 2u);                            // M: 48 twice, then an edge of 4
  EXPECT_DOUBLE_EQ(p.tiles[0].cube_macs, 48.0 * 288 * 64);  // 256 columns padded to 6 x 48
  EXPECT_DOUBLE_EQ(p.tiles[1].cube_macs, 6.0 * 288 * 64);   // the edge's 4 rows cost a block of 6
  EXPECT_DOUBLE_EQ(held_at(p, cpu, "registers"), 6.0 * 48 * 4);
  EXPECT_DOUBLE_EQ(held_at(p, cpu, "L1d"), 6.0 * 64 * 4 + 64.0 * 48 * 4);
  EXPECT_DOUBLE_EQ(held_at(p, cpu, "L2"), 48.0 * 64 * 4);
  EXPECT_DOUBLE_EQ(held_at(p, cpu, "L3"), 64.0 * 256 * 4);

  const KernelPlan npu = plan_kernel(w, small_target(), s);
  EXPECT_DOUBLE_EQ(npu.registers.accumulators, 0);
  EXPECT_EQ(npu.cores, small_target().ai_cores);

  // conv2d's micro-kernel is the same broadcast-against-vectors block (host/codegen_conv.hpp).
  const Workload conv =
      workload(R"({"op":"conv2d","dims":{"N":1,"C":64,"H":14,"W":14,"K":64,"R":3,"S":3,"pad":1},"dtype":"float32"})");
  const KernelPlan cp = plan_kernel(conv, cpu,
                                    Schedule({{"micro_m", 4},
                                              {"micro_n", 32},
                                              {"tile_h", 14},
                                              {"tile_w", 14},
                                              {"tile_n", 64},
                                              {"tile_k", 64},
                                              {"k_steps", 1},
                                              {"async_copy_depth", 1},
                                              {"tile_order", 0},
                                              {"fusion_level", 0}}));
  EXPECT_DOUBLE_EQ(cp.registers.accumulators, 4 * 2);
  EXPECT_DOUBLE_EQ(cp.registers.loads, 2 + 4);
}

// A CPU target's cube fields are SIMD lanes (host/machine.hpp), not a fractal: K keeps the
// 32 B block (8 fp32 values) and the tile lists gain no 1s and 2s from cube_n = cube_k = 1.
TEST(CpuUnitTest, CpuTargetsKeepTheGranuleBlockAndTileLists) {
  const Workload w = workload(R"({"op":"matmul","dims":{"M":36,"N":36,"K":36},"dtype":"float32"})");
  Target cpu = small_target();
  cpu.organisation = "cpu";
  cpu.cube_m = 8;
  cpu.cube_n = cpu.cube_k = 1;
  EXPECT_DOUBLE_EQ(plan_kernel(w, cpu, matmul_schedule(36, 36, 36, 1, 1, 0)).tiles[0].cube_macs, 40.0 * 36 * 40);
  for (const auto& k : knobs_for(w, cpu)) {
    if (k.name == "tile_n" || k.name == "tile_k") EXPECT_EQ(k.values.front(), 16) << k.name;
  }
}

}  // namespace
}  // namespace atvoss::host
