// Generated conv2d and depthwise_conv2d kernels are correct over a table of schedules (edges
// included: blocks larger than the dims, odd sizes, stride 2, padding, 1x1, 3x3 and 5x3
// windows, partial channel blocks and panels, weights in place / packed / packed with
// prefetch, every tile_order and fusion level, two threads in every tile_order: several pixel
// blocks and one, packing split and not), each checked by the real runner against the double
// reference (capped at the machine's cores); a wrong conv kernel is caught as wrong_answer.
// Micro-tiles of one output row skip the window taps that read the zero border: the stem-like
// and one-row cases reach every such skip (first and last window rows, pixels at both edges).
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "host/codegen.hpp"
#include "host/codegen_conv.hpp"
#include "host/conv_space.hpp"
#include "host/host_space.hpp"
#include "host/measure.hpp"
#include "host/operands.hpp"
#include "host_test_util.hpp"

namespace atvoss::host {
namespace {

using testing::expect_every_case_computes_the_reference;
using testing::ScheduleCase;
using testing::TempDir;
using testing::workload;

const std::vector<ScheduleCase> kConvCases = {
    // One pixel block and two threads: its three output-channel panels cut into slices of one
    // and two, packed (ring) and in place, every tile_order.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":24,"H":7,"W":7,"K":40,"R":3,"S":3,"stride":1,"pad":1},"epilogue":["bias"]})",
     {{"micro_m", 7}, {"micro_n", 16}, {"tile_k", 16}, {"tile_order", 0}, {"async_copy_depth", 2}, {"threads", 2}}},
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":24,"H":7,"W":7,"K":40,"R":3,"S":3,"stride":1,"pad":1},"epilogue":["bias"]})",
     {{"micro_m", 7}, {"micro_n", 16}, {"tile_k", 16}, {"tile_order", 1}, {"async_copy_depth", 1}, {"threads", 2}}},
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":2,"C":24,"H":7,"W":7,"K":40,"R":3,"S":3,"stride":1,"pad":1},"epilogue":["bias"]})",
     {{"micro_m", 7}, {"micro_n", 16}, {"tile_k", 16}, {"tile_order", 2}, {"async_copy_depth", 3}, {"threads", 2}}},
    // C < lanes, K < micro_n, 3x3 pad 1, every block larger than the dims.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":3,"H":3,"W":9,"K":5,"R":3,"S":3,"stride":1,"pad":1}})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_h", 4}, {"tile_w", 16}, {"tile_order", 0}, {"async_copy_depth", 1}}},
    // Stride 2, two images, channel block 16 > C = 13, pixel block 1 x 8, A-reuse order.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":2,"C":13,"H":10,"W":11,"K":20,"R":3,"S":3,"stride":2,"pad":1},"epilogue":["bias","relu"]})",
     {{"micro_m", 4},
      {"micro_n", 24},
      {"tile_h", 1},
      {"tile_w", 8},
      {"tile_n", 32},
      {"tile_k", 16},
      {"tile_order", 1},
      {"fusion_level", 1},
      {"k_steps", 1},
      {"async_copy_depth", 3},
      {"threads", 2}}},
    // 1x1, three channel blocks (16, 16, 8), the whole epilogue as separate passes.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":40,"H":6,"W":6,"K":17,"R":1,"S":1},"epilogue":["batchnorm","relu","add"]})",
     {{"micro_m", 8},
      {"micro_n", 8},
      {"tile_h", 4},
      {"tile_w", 8},
      {"tile_k", 16},
      {"tile_order", 2},
      {"fusion_level", 0},
      {"async_copy_depth", 1},
      {"threads", 2}}},
    // Three channel blocks (16, 16, 3) and two output-channel blocks (K = 33 over blocks of
    // 32), gelu fused. Its weight panel (18 KB) fits a 32 KB L1d as well as a 48 KB one.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":35,"H":9,"W":9,"K":33,"R":3,"S":3,"pad":1},"epilogue":["bias","gelu"]})",
     {{"micro_m", 5},
      {"micro_n", 16},
      {"tile_h", 4},
      {"tile_w", 8},
      {"tile_n", 32},
      {"tile_k", 16},
      {"tile_order", 0},
      {"fusion_level", 1},
      {"async_copy_depth", 2},
      {"threads", 2}}},
    // 1x1 stride 2 with a residual fused at level 2.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":16,"H":8,"W":8,"K":24,"R":1,"S":1,"stride":2},"epilogue":["add"]})",
     {{"micro_m", 6}, {"micro_n", 8}, {"tile_order", 2}, {"fusion_level", 2}, {"k_steps", 1}, {"async_copy_depth", 3}}},
    // A 5x3 window with pad 2, batchnorm fused.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":8,"H":12,"W":10,"K":16,"R":5,"S":3,"pad":2},"epilogue":["batchnorm","relu"]})",
     {{"micro_m", 4},
      {"micro_n", 16},
      {"tile_h", 16},
      {"tile_w", 16},
      {"tile_order", 1},
      {"fusion_level", 2},
      {"async_copy_depth", 2}}},
    // Two images with packed weights and the weight blocks outer: packed once, in the first.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":2,"C":12,"H":5,"W":6,"K":10,"R":3,"S":3,"pad":1},"epilogue":["bias"]})",
     {{"micro_m", 4},
      {"micro_n", 8},
      {"tile_h", 4},
      {"tile_w", 8},
      {"tile_order", 2},
      {"async_copy_depth", 2},
      {"threads", 2}}},
    // Stride 2 without padding; micro-tiles wrap across output rows.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":9,"H":9,"W":9,"K":8,"R":3,"S":3,"stride":2}})",
     {{"micro_m", 5}, {"micro_n", 8}, {"tile_h", 4}, {"tile_w", 8}, {"tile_order", 0}, {"threads", 2}}},
    // ResNet's stem (7x7, stride 2, pad 3): micro-tiles of one output row skip the border's taps,
    // two and three pixels deep at the left and right edges, three window rows at the top.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":3,"H":20,"W":20,"K":16,"R":7,"S":7,"stride":2,"pad":3},"epilogue":["bias"]})",
     {{"micro_m", 5}, {"micro_n", 16}, {"tile_h", 4}, {"tile_w", 16}, {"tile_k", 16}, {"tile_order", 0}}},
    // One input row: every micro-tile skips the window's first and last rows.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":20,"H":1,"W":6,"K":16,"R":3,"S":3,"pad":1}})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_h", 1}, {"tile_w", 8}, {"tile_order", 2}, {"async_copy_depth", 1}}},
    // SiLU fused (EfficientNet's and YOLO's convs).
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":24,"H":10,"W":11,"K":40,"R":3,"S":3,"stride":2,"pad":1},"epilogue":["bias","silu"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_h", 4}, {"tile_w", 8}, {"tile_order", 2}, {"threads", 2}}},
    // YOLO's LeakyRelu (each channel's slope), ESPCN's Tanh and MobileNetV3's HardSwish fused.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":24,"H":10,"W":11,"K":40,"R":3,"S":3,"pad":1},"epilogue":["bias","leaky_relu"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_h", 4}, {"tile_w", 8}, {"tile_order", 2}}},
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":24,"H":10,"W":11,"K":40,"R":3,"S":3,"pad":1},"epilogue":["bias","gelu_erf"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_h", 4}, {"tile_w", 8}, {"tile_order", 2}}},
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":24,"H":10,"W":11,"K":40,"R":3,"S":3,"pad":1},"epilogue":["bias","tanh"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_h", 4}, {"tile_w", 8}, {"tile_order", 2}}},
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":24,"H":10,"W":11,"K":40,"R":1,"S":1},"epilogue":["bias","hardswish"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_h", 4}, {"tile_w", 8}, {"tile_order", 2}}},
};

const std::vector<ScheduleCase> kDepthwiseCases = {
    // C = 37: a partial channel tile in every block.
    {R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":37,"H":9,"W":11,"R":3,"S":3,"pad":1},"epilogue":["bias","relu"]})",
     {{"micro_m", 4}, {"micro_n", 16}, {"tile_c", 32}, {"tile_order", 0}, {"fusion_level", 1}, {"threads", 2}}},
    // Stride 2, two images, residual; the epilogue unfused.
    {R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":2,"C":24,"H":8,"W":8,"R":3,"S":3,"stride":2,"pad":1},"epilogue":["batchnorm","relu","add"]})",
     {{"micro_m", 6},
      {"micro_n", 8},
      {"tile_h", 1},
      {"tile_w", 8},
      {"tile_order", 1},
      {"fusion_level", 0},
      {"k_steps", 1},
      {"async_copy_depth", 2},
      {"threads", 2}}},
    // 5x5 pad 2, blocks larger than the dims, gelu and residual fused.
    {R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":64,"H":7,"W":7,"R":5,"S":5,"pad":2},"epilogue":["bias","gelu","add"]})",
     {{"micro_m", 2},
      {"micro_n", 32},
      {"tile_h", 4},
      {"tile_w", 8},
      {"tile_c", 128},
      {"tile_order", 2},
      {"fusion_level", 2},
      {"threads", 2}}},
    // 1 pixel x 1 vector, C < lanes.
    {R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":5,"H":6,"W":5,"R":3,"S":3}})",
     {{"micro_m", 1}, {"micro_n", 8}, {"tile_order", 0}}},
    // Wide enough for interior register blocks (every tap inside the image, no branch) beside
    // the edge ones; 48 channels end mid-block; blocks of 16 columns end mid-register-block.
    {R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":48,"H":20,"W":22,"R":3,"S":3,"pad":1},"epilogue":["bias","relu6"]})",
     {{"micro_m", 6},
      {"micro_n", 32},
      {"tile_h", 4},
      {"tile_w", 16},
      {"tile_c", 32},
      {"tile_order", 2},
      {"async_copy_depth", 2},
      {"threads", 2}}},
    // A Sigmoid on a depthwise conv (a squeeze-excitation's gate).
    {R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":40,"H":9,"W":9,"R":5,"S":5,"pad":2},"epilogue":["bias","sigmoid"]})",
     {{"micro_m", 4}, {"micro_n", 16}, {"tile_h", 4}, {"tile_order", 0}}},
    // MobileNetV3's depthwise convs: HardSwish; a PRelu's slopes.
    {R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":40,"H":9,"W":9,"R":3,"S":3,"pad":1},"epilogue":["bias","hardswish","leaky_relu"]})",
     {{"micro_m", 4}, {"micro_n", 16}, {"tile_h", 4}, {"tile_order", 0}}},
    // 5x5, pad 2, stride 2 (EfficientNet's downsampling depthwise convs) with interior blocks.
    {R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":32,"H":23,"W":23,"R":5,"S":5,"stride":2,"pad":2}})",
     {{"micro_m", 4}, {"micro_n", 16}, {"tile_h", 16}, {"tile_order", 1}}},
};

// On two threads a conv takes pixel blocks that share out evenly (56 rows: 4-row blocks, 7
// each, where 16-row ones gave 32 | 24 rows); one whose blocks already do, or where none can
// (7 rows), or where its blocks sliced by channels leave a tenth less work, keeps them; a
// depthwise conv changes only its threads.
TEST(ConvCodegenTest, OnSeveralThreadsAConvTakesPixelBlocksThatShareOutEvenly) {
  MachineInfo m = testing::avx512_machine();
  m.physical_cores = 2;
  const Workload narrow = workload(
      R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":128,"H":56,"W":56,"K":32,"R":3,"S":3,"pad":1,"stride":1}})");
  const Schedule one = conv_default_schedule(narrow, m);
  ASSERT_EQ(one.at("tile_h"), 16);
  const Schedule two = conv_on_threads(narrow, one, m, 2);
  EXPECT_EQ(two.at("threads"), 2);
  EXPECT_EQ(two.at("tile_h"), 4);
  EXPECT_TRUE(conv_space_for(narrow, m).check(two).ok);
  const Workload wide = workload(
      R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":256,"H":56,"W":56,"K":64,"R":1,"S":1,"pad":0,"stride":1}})");
  EXPECT_EQ(conv_on_threads(wide, conv_default_schedule(wide, m), m, 2).at("tile_h"), 4);
  const Workload even = workload(
      R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":128,"H":32,"W":32,"K":32,"R":3,"S":3,"pad":1,"stride":1}})");
  EXPECT_EQ(conv_on_threads(even, conv_default_schedule(even, m), m, 2).at("tile_h"), 16);
  // SqueezeNet's last conv: rows of 13 pixels would share out evenly but leave a third of the
  // 6-pixel tiles empty; the one block of 169, its 1000 channels sliced, is a tenth less work.
  const Workload rows13 = workload(
      R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":512,"H":13,"W":13,"K":1000,"R":1,"S":1,"pad":0,"stride":1}})");
  ASSERT_EQ(conv_default_schedule(rows13, m).at("micro_m"), 6);
  EXPECT_EQ(conv_on_threads(rows13, conv_default_schedule(rows13, m), m, 2).at("tile_h"),
            conv_default_schedule(rows13, m).at("tile_h"));
  const Workload small = workload(
      R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":512,"H":7,"W":7,"K":512,"R":3,"S":3,"pad":1,"stride":1}})");
  EXPECT_EQ(conv_on_threads(small, conv_default_schedule(small, m), m, 2).at("tile_h"),
            conv_default_schedule(small, m).at("tile_h"));
  const Workload dw = workload(
      R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":128,"H":56,"W":56,"R":3,"S":3,"pad":1,"stride":1}})");
  Schedule dw_two = conv_default_schedule(dw, m);
  dw_two.set("threads", 2);
  EXPECT_EQ(conv_on_threads(dw, conv_default_schedule(dw, m), m, 2), dw_two);
}

// A conv's threads cut each pixel block's output channels into slices where OpenMP's static
// share of the blocks would leave one thread over a tenth more pixels than the others.
TEST(ConvCodegenTest, ThreadsSliceTheChannelsWhereThePixelBlocksShareUnevenly) {
  EXPECT_EQ(conv_slices(7, 7, 16, 8, 2, 4), 2);     // one block
  EXPECT_EQ(conv_slices(56, 56, 16, 64, 2, 4), 2);  // rows of 16, 16 | 16, 8
  EXPECT_EQ(conv_slices(56, 56, 8, 64, 2, 4), 2);   // seven blocks: 4 | 3
  EXPECT_EQ(conv_slices(32, 32, 8, 64, 2, 4), 1);   // 2 | 2
  EXPECT_EQ(conv_slices(56, 56, 1, 64, 2, 4), 1);   // 28 | 28 rows
  EXPECT_EQ(conv_slices(56, 56, 4, 64, 4, 4), 4);   // 14 blocks in chunks of 4: rows 16, 16, 16, 8
  EXPECT_EQ(conv_slices(7, 7, 16, 8, 1, 4), 1);
  // One panel (32 output channels at micro_n 32) cannot be shared: the blocks are.
  EXPECT_EQ(conv_slices(56, 56, 16, 64, 2, 1), 1);
  EXPECT_EQ(conv_slices(7, 7, 16, 8, 4, 3), 1);
}

TEST(ConvCodegenTest, EveryConvScheduleInTheTableComputesTheReference) {
  expect_every_case_computes_the_reference(kConvCases, 7);
}

TEST(ConvCodegenTest, EveryDepthwiseScheduleInTheTableComputesTheReference) {
  expect_every_case_computes_the_reference(kDepthwiseCases, 7);
}

// Default schedules of workloads too small for most blocks are valid and correct.
TEST(ConvCodegenTest, DefaultSchedulesAreValidAndCorrect) {
  std::vector<ScheduleCase> cases;
  for (std::size_t i : {0, 1, 2, 7}) cases.push_back({kConvCases[i].workload, {}});
  for (std::size_t i : {0, 1}) cases.push_back({kDepthwiseCases[i].workload, {}});
  expect_every_case_computes_the_reference(cases, 7);
}

// The conv is 1x1 so that its weight panels leave every tile_k more than one valid value
// on a 32 KB L1d too (a 3x3's panel of 32 channels is 36 KB there).
TEST(ConvCodegenTest, EveryKnobChangesTheSource) {
  testing::expect_every_knob_changes_the_source(workload(
      R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":128,"H":28,"W":28,"K":128,"R":1,"S":1},"epilogue":["bias","add"]})"));
  testing::expect_every_knob_changes_the_source(workload(
      R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":256,"H":28,"W":28,"R":3,"S":3,"pad":1},"epilogue":["batchnorm","add"]})"));
}

TEST(ConvCodegenTest, AConvKernelThatComputesWrongIsAWrongAnswer) {
  const Workload w =
      workload(R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":8,"H":6,"W":6,"K":8,"R":3,"S":3,"pad":1}})");
  std::string src = generate_source(w, default_schedule(w, this_machine()), this_machine());
  const std::string fma = "acc[i][v] += av * bv[v];";
  ASSERT_NE(src.find(fma), std::string::npos);
  src.replace(src.find(fma), fma.size(), "acc[i][v] += av * bv[v] * 1.001f;");
  TempDir cache;
  HostConfig config;
  config.build.cache_dir = cache.str();
  const auto m = measure_sources({{w, src, 1, 3}}, config);
  EXPECT_EQ(m[0].status, Status::wrong_answer) << m[0].message;
}

TEST(ConvSpaceTest, RefusesWhatItCannotGenerate) {
  std::string why;
  EXPECT_TRUE(supports(
      workload(R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":8,"H":8,"W":8,"K":8,"R":3,"S":3}})"), &why))
      << why;
  EXPECT_FALSE(supports(workload(R"({"op":"conv2d","dims":{"N":1,"C":8,"H":8,"W":8,"K":8,"R":3,"S":3}})"), &why));
  EXPECT_NE(why.find("dtype"), std::string::npos);
  EXPECT_TRUE(supports(
      workload(
          R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":8,"H":8,"W":8,"K":8,"R":3,"S":3},"epilogue":["silu"]})"),
      &why))
      << why;
  EXPECT_FALSE(supports(
      workload(
          R"({"op":"conv2d","dtype":"int8","dims":{"N":1,"C":8,"H":8,"W":8,"K":8,"R":3,"S":3},"epilogue":["silu"]})"),
      &why));
  EXPECT_NE(why.find("silu"), std::string::npos);
  EXPECT_FALSE(supports(
      workload(
          R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":8,"H":8,"W":8,"K":8,"R":3,"S":3},"epilogue":["layernorm"]})"),
      &why));
  EXPECT_NE(why.find("layernorm"), std::string::npos);
  EXPECT_FALSE(supports(
      workload(
          R"({"op":"conv2d","dtype":"int8","dims":{"N":1,"C":8,"H":8,"W":8,"K":8,"R":3,"S":3},"epilogue":["leaky_relu"]})"),
      &why));
  EXPECT_NE(why.find("leaky_relu"), std::string::npos);
  EXPECT_FALSE(supports(
      workload(
          R"({"op":"group_conv2d","dtype":"float32","dims":{"N":1,"C":8,"H":8,"W":8,"K":8,"R":3,"S":3,"groups":2}})"),
      &why));
  EXPECT_NE(why.find("group_conv2d"), std::string::npos);
  EXPECT_FALSE(supports(
      workload(R"({"op":"max_pool2d","dtype":"float32","dims":{"N":1,"C":8,"H":8,"W":8,"R":2,"S":2,"stride":2}})"),
      &why));
  EXPECT_THROW(
      space_for(
          workload(R"({"op":"max_pool2d","dtype":"float32","dims":{"N":1,"C":8,"H":8,"W":8,"R":2,"S":2,"stride":2}})"),
          this_machine()),
      Error);
}

TEST(ConvSpaceTest, LimitsRejectWithReasons) {
  const Workload w =
      workload(R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":256,"H":14,"W":14,"K":256,"R":3,"S":3,"pad":1}})");
  const MachineInfo m = testing::avx2_machine();
  const ScheduleSpace space = space_for(w, m);
  Schedule s = default_schedule(w, m);
  ASSERT_TRUE(space.check(s).ok);
  s.set("micro_m", 8);
  s.set("micro_n", 3 * m.lanes());
  EXPECT_NE(space.check(s).reason.find("registers"), std::string::npos) << space.check(s).reason;
  // A 5x5 panel of 256 channels x 16 columns is 400 KB, more than half of the 512 KB L2; the
  // same depth of a 3x3 (144 KB) streams from L2.
  const Workload w5 =
      workload(R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":256,"H":14,"W":14,"K":256,"R":5,"S":5,"pad":2}})");
  s = default_schedule(w5, m);
  s.set("tile_k", 256);
  EXPECT_NE(space_for(w5, m).check(s).reason.find("L2: weight panel"), std::string::npos)
      << space_for(w5, m).check(s).reason;
  s = default_schedule(w, m);
  s.set("tile_k", 256);
  EXPECT_TRUE(space.check(s).ok) << space.check(s).reason;
}

// The default's micro-tiles are runs of whole output rows where 8, 7, 6 or 5 pixels divide
// every pixel block's width and fit the registers with 2 vectors; else 6 pixels.
TEST(ConvSpaceTest, TheDefaultTakesPixelRunsOfWholeOutputRows) {
  auto micro_m = [](int hw, int stride, const MachineInfo& m) {
    const Workload w =
        workload(R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":64,"H":)" + std::to_string(hw) + R"(,"W":)" +
                 std::to_string(hw) + R"(,"K":64,"R":3,"S":3,"pad":1,"stride":)" + std::to_string(stride) + "}}");
    const Schedule s = default_schedule(w, m);
    EXPECT_EQ(s.at("micro_n"), 2 * m.lanes());
    return s.at("micro_m");
  };
  const MachineInfo wide = testing::avx512_machine(), avx2 = testing::avx2_machine();
  EXPECT_EQ(micro_m(7, 1, wide), 7);
  EXPECT_EQ(micro_m(56, 1, wide), 8);
  EXPECT_EQ(micro_m(10, 1, wide), 5);
  EXPECT_EQ(micro_m(56, 2, wide), 7);   // 28 output columns
  EXPECT_EQ(micro_m(112, 1, wide), 8);  // blocks of 64 and 48 columns
  EXPECT_EQ(micro_m(100, 1, wide), 6);  // 64 and 36
  EXPECT_EQ(micro_m(13, 1, wide), 6);   // no run: the old default
  EXPECT_EQ(micro_m(56, 1, avx2), 6);   // 8 x 2 and 7 x 2 vectors overflow 16 registers
  EXPECT_EQ(micro_m(14, 1, avx2), 6);   // 7 x 2 overflows: not a run, the old default
}

// An fp32 conv2d's default walks its micro-tiles pixel-major (order 2) from a 28 x 28 output up,
// panels outer (order 0) below; depthwise and low-precision convs keep order 0.
TEST(ConvSpaceTest, TheDefaultWalksPixelsFirstOnLargeOutputs) {
  auto order = [](const std::string& op, const std::string& dtype, int hw, int stride) {
    const std::string k = op == "conv2d" ? R"(,"K":64)" : "";
    const Workload w = workload(R"({"op":")" + op + R"(","dtype":")" + dtype + R"(","dims":{"N":1,"C":64,"H":)" +
                                std::to_string(hw) + R"(,"W":)" + std::to_string(hw) + k +
                                R"(,"R":3,"S":3,"pad":1,"stride":)" + std::to_string(stride) + "}}");
    return default_schedule(w, dtype == "float32" ? testing::avx512_machine() : this_machine()).at("tile_order");
  };
  EXPECT_EQ(order("conv2d", "float32", 56, 1), 2);
  EXPECT_EQ(order("conv2d", "float32", 28, 1), 2);
  EXPECT_EQ(order("conv2d", "float32", 56, 2), 2);  // 28 x 28 out
  EXPECT_EQ(order("conv2d", "float32", 27, 1), 0);
  EXPECT_EQ(order("conv2d", "float32", 28, 2), 0);  // 14 x 14 out
  EXPECT_EQ(order("conv2d", "float32", 7, 1), 0);
  EXPECT_EQ(order("depthwise_conv2d", "float32", 56, 1), 0);
  if (this_machine().has_flag("avx512_vnni")) EXPECT_EQ(order("conv2d", "int8", 56, 1), 0);
}

// ... unless its weight block (3 x 3 taps x tile_k channels x the block's outputs) is larger
// than L2 (1 MiB on this machine), which order 2 would read from L3 for every row of pixels.
TEST(ConvSpaceTest, TheDefaultWalksPanelsFirstWhereTheWeightBlockOverflowsL2) {
  const MachineInfo m = testing::avx512_machine();
  auto conv = [&](int c, int k) {
    const Workload w = workload(R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":)" + std::to_string(c) +
                                R"(,"H":28,"W":28,"K":)" + std::to_string(k) + R"(,"R":3,"S":3,"pad":1,"stride":1}})");
    const Schedule s = default_schedule(w, m);
    const std::int64_t block =
        9 * std::min<std::int64_t>(s.at("tile_k"), c) * std::min<std::int64_t>(s.at("tile_n"), k) * 4;
    return std::make_pair(s.at("tile_order"), block);
  };
  for (const auto& [c, k] : {std::pair{128, 128}, {64, 256}}) {
    const auto [order, block] = conv(c, k);
    EXPECT_LE(block, m.l2_bytes) << c << " -> " << k;
    EXPECT_EQ(order, 2) << c << " -> " << k;
  }
  for (const auto& [c, k] : {std::pair{128, 256}, {512, 512}}) {
    const auto [order, block] = conv(c, k);
    EXPECT_GT(block, m.l2_bytes) << c << " -> " << k;
    EXPECT_EQ(order, 0) << c << " -> " << k;
  }
}

// The reference agrees with a hand-written loop over NHWC input and HWIO weights (stride 2,
// pad 1) and flags a single wrong output.
TEST(ConvOperandsTest, TheReferenceMatchesAHandWrittenLoop) {
  const Workload w = workload(
      R"({"op":"conv2d","dtype":"float32","dims":{"N":2,"C":3,"H":5,"W":4,"K":2,"R":3,"S":3,"stride":2,"pad":1},"epilogue":["bias"]})");
  Operands o = make_operands(w, 3);
  ASSERT_EQ(o.a.size(), 2u * 5 * 4 * 3);
  ASSERT_EQ(o.b.size(), 3u * 3 * 3 * 2);
  ASSERT_EQ(w.out_h(), 3);
  ASSERT_EQ(w.out_w(), 2);
  ASSERT_EQ(o.c.size(), 2u * 3 * 2 * 2);
  for (int n = 0; n < 2; ++n)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 2; ++x)
        for (int k = 0; k < 2; ++k) {
          double v = o.bias[k];
          for (int r = 0; r < 3; ++r)
            for (int s = 0; s < 3; ++s)
              for (int c = 0; c < 3; ++c) {
                const int ih = 2 * y - 1 + r, iw = 2 * x - 1 + s;
                if (ih < 0 || ih >= 5 || iw < 0 || iw >= 4) continue;
                v += double(o.a[((n * 5 + ih) * 4 + iw) * 3 + c]) * double(o.b[((r * 3 + s) * 3 + c) * 2 + k]);
              }
          o.c[((n * 3 + y) * 2 + x) * 2 + k] = float(v);
        }
  EXPECT_LT(max_relative_error(w, o, 3), 1e-6);
  o.c[7] += 0.01f;
  EXPECT_GT(max_relative_error(w, o, 3), 1e-3);
  EXPECT_EQ(w.flops(), 2.0 * 2 * 2 * 3 * 2 * 3 * 9);
}

TEST(ConvOperandsTest, DepthwiseReferenceMatchesAHandWrittenLoop) {
  const Workload w =
      workload(R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":3,"H":4,"W":4,"R":3,"S":3,"pad":1}})");
  Operands o = make_operands(w, 5);
  ASSERT_EQ(o.b.size(), 27u);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x)
      for (int c = 0; c < 3; ++c) {
        double v = 0;
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) {
            const int ih = y - 1 + r, iw = x - 1 + s;
            if (ih >= 0 && ih < 4 && iw >= 0 && iw < 4)
              v += double(o.a[(ih * 4 + iw) * 3 + c]) * double(o.b[(r * 3 + s) * 3 + c]);
          }
        o.c[(y * 4 + x) * 3 + c] = float(v);
      }
  EXPECT_LT(max_relative_error(w, o, 5), 1e-6);
  o.c[20] += 0.01f;
  EXPECT_GT(max_relative_error(w, o, 5), 1e-3);
}

}  // namespace
}  // namespace atvoss::host
