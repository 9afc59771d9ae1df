// Row-op kernels (elementwise, map, softmax, layernorm) are correct over a table of schedules
// with edges (odd sizes, size 1, chunks wider than the row, more threads than blocks), each
// checked by the runner against the double reference; every knob changes the source; the
// space keeps what does not fit the registers out.
#include "host/codegen_rowops.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "host/codegen.hpp"
#include "host/host_space.hpp"
#include "host/knob_values.hpp"
#include "host/measure.hpp"
#include "host/rowops_space.hpp"
#include "host_test_util.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

using testing::expect_every_case_computes_the_reference;
using testing::ScheduleCase;
using testing::TempDir;
using testing::workload;

const std::vector<ScheduleCase> kRowCases = {
    {R"({"op":"elementwise","dtype":"float32","dims":{"M":13,"N":37},"epilogue":["bias","relu"]})",
     {{"tile_m", 4}, {"chunk", 2}, {"fusion_level", 1}, {"k_steps", 4}}},
    {R"({"op":"elementwise","dtype":"float32","dims":{"M":9,"N":70},"epilogue":["bias","gelu","add"]})",
     {{"tile_m", 16}, {"chunk", 1}, {"fusion_level", 0}, {"async_copy_depth", 4}, {"threads", 2}}},
    {R"({"op":"map","dtype":"float32","dims":{"M":1,"N":1},"epilogue":["silu"]})", {}},
    {R"({"op":"map","dtype":"float32","dims":{"M":7,"N":100},"epilogue":["tanh","leaky_relu","hardswish","mish"]})",
     {{"tile_m", 4}, {"chunk", 2}, {"fusion_level", 1}}},
    {R"({"op":"map","dtype":"float32","dims":{"M":7,"N":100},"epilogue":["batchnorm","sigmoid"]})",
     {{"tile_m", 1}, {"chunk", 8}, {"fusion_level", 0}, {"k_steps", 4}, {"async_copy_depth", 2}}},
    {R"({"op":"softmax","dtype":"float32","dims":{"M":1,"N":1}})", {{"tile_order", 1}}},
    {R"({"op":"softmax","dtype":"float32","dims":{"M":5,"N":3}})", {{"tile_order", 0}}},
    {R"({"op":"softmax","dtype":"float32","dims":{"M":5,"N":3}})", {{"tile_order", 1}}},
    {R"({"op":"softmax","dtype":"float32","dims":{"M":33,"N":129}})",
     {{"tile_order", 0}, {"tile_m", 16}, {"chunk", 8}, {"k_steps", 4}, {"threads", 2}}},
    {R"({"op":"softmax","dtype":"float32","dims":{"M":33,"N":129}})",
     {{"tile_order", 1}, {"tile_m", 4}, {"chunk", 4}, {"async_copy_depth", 2}, {"threads", 2}}},
    {R"({"op":"layernorm","dtype":"float32","dims":{"M":1,"N":1}})", {{"tile_order", 1}}},
    {R"({"op":"layernorm","dtype":"float32","dims":{"M":17,"N":768}})",
     {{"tile_order", 0}, {"tile_m", 16}, {"chunk", 8}, {"threads", 2}}},
    {R"({"op":"layernorm","dtype":"float32","dims":{"M":3,"N":50}})",
     {{"tile_order", 1}, {"tile_m", 4}, {"chunk", 2}, {"k_steps", 4}, {"async_copy_depth", 4}, {"threads", 2}}},
};

TEST(RowOpsCodegenTest, EveryScheduleInTheTableComputesTheReference) {
  expect_every_case_computes_the_reference(kRowCases, 11);
}

TEST(RowOpsCodegenTest, EveryKnobChangesTheSource) {
  for (const char* text :
       {R"({"op":"softmax","dtype":"float32","dims":{"M":64,"N":1024}})",
        R"({"op":"layernorm","dtype":"float32","dims":{"M":64,"N":1024}})",
        R"({"op":"elementwise","dtype":"float32","dims":{"M":64,"N":1024},"epilogue":["bias","add"]})"}) {
    testing::expect_every_knob_changes_the_source(workload(text));
  }
}

TEST(RowOpsCodegenTest, ALayernormWithoutGammaIsAWrongAnswer) {
  const Workload w = workload(R"({"op":"layernorm","dtype":"float32","dims":{"M":4,"N":40}})");
  std::string src = generate_source(w, default_schedule(w, this_machine()), this_machine());
  const std::string gamma = "* loadu(g.scale + j)";
  ASSERT_NE(src.find(gamma), std::string::npos);
  src.replace(src.find(gamma), gamma.size(), "");
  const Measurement m = testing::measure_source(w, src);
  EXPECT_EQ(m.status, Status::wrong_answer) << m.message;
}

TEST(RowOpsSpaceTest, KnobsFollowTheOp) {
  auto names = [](const ScheduleSpace& s) {
    std::vector<std::string> out;
    for (const auto& k : s.knobs()) out.push_back(k.name);
    return out;
  };
  const MachineInfo& m = this_machine();
  EXPECT_EQ(names(space_for(workload(R"({"op":"softmax","dtype":"float32","dims":{"M":8,"N":64}})"), m)),
            (std::vector<std::string>{"tile_m", "tile_n", "k_steps", "async_copy_depth", "tile_order", "threads"}));
  EXPECT_EQ(
      names(space_for(workload(R"({"op":"map","dtype":"float32","dims":{"M":8,"N":64},"epilogue":["relu"]})"), m)),
      (std::vector<std::string>{"tile_m", "tile_n", "k_steps", "async_copy_depth", "fusion_level", "threads"}));
  // A 3-column row keeps only the narrowest chunk; a single row only blocks of 1.
  const ScheduleSpace tiny = space_for(workload(R"({"op":"softmax","dtype":"float32","dims":{"M":1,"N":3}})"), m);
  EXPECT_EQ(tiny.knobs()[0].values, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(tiny.knobs()[1].values, (std::vector<std::int64_t>{m.lanes()}));
}

TEST(RowOpsSpaceTest, AChunkWhoseAccumulatorsSpillIsInvalid) {
  MachineInfo avx2;  // 8 lanes, 16 vector registers
  avx2.simd_bytes = 32;
  avx2.vector_registers = 16;
  const Workload w = workload(R"({"op":"softmax","dtype":"float32","dims":{"M":8,"N":4096}})");
  const ScheduleSpace space = space_for(w, avx2);
  Schedule s = default_schedule(w, avx2);
  s.set("tile_n", 64);  // 8 vectors: 2 x 8 + 2 > 16 with two accumulators each
  s.set("tile_order", 1);
  const Verdict v = space.check(s);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("registers"), std::string::npos) << v.reason;
  s.set("tile_order", 0);  // one accumulator a vector fits
  EXPECT_TRUE(space.check(s).ok) << space.check(s).reason;
}

TEST(RowOpsSpaceTest, RefusesEpiloguesItHasNoVectorFormOf) {
  std::string why;
  EXPECT_FALSE(
      supports(workload(R"({"op":"map","dtype":"float32","dims":{"M":8,"N":8},"epilogue":["layernorm"]})"), &why));
  EXPECT_NE(why.find("'epilogue'"), std::string::npos) << why;
  EXPECT_NE(why.find("layernorm"), std::string::npos) << why;
  EXPECT_FALSE(supports(workload(R"({"op":"reduce","dtype":"float32","dims":{"M":8,"N":8}})"), &why));
  EXPECT_NE(why.find("reduce"), std::string::npos) << why;
  EXPECT_TRUE(supports(workload(R"({"op":"softmax","dtype":"float32","dims":{"M":8,"N":8}})"), &why)) << why;
}

}  // namespace
}  // namespace atvoss::host
