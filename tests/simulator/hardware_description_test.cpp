// Seed-format hardware descriptions (simulator/hardware_description.hpp): what each
// section becomes in the Target, what is listed as ignored, and the errors that name
// the field by its dotted path.
#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "simulator/hardware_description.hpp"
#include "simulator/presets.hpp"
#include "bad_input_message.hpp"

namespace atvoss::simulator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A small coupled NPU with an 8x8x8 fp16 unit, an int8 unit of twice the MACs and one
// field of each kind the simulator does not use.
Json description() {
  return Json::parse(R"({
    "name": "test-npu",
    "vendor": "nobody",
    "architecture": {"core_type": "coupled", "cores": 4, "clock_ghz": 1.2, "pipeline_depth": 7},
    "memory": {"hierarchy": [
      {"name": "DDR", "size": 2147483648, "bandwidth": 40, "latency": 300},
      {"name": "SRAM", "role": "L1", "size": 262144, "bandwidth": 32, "latency": 90},
      {"name": "L0A", "size": 32768, "bandwidth": 128, "latency": 12},
      {"name": "L0B", "size": 32768, "bandwidth": 96},
      {"name": "L0C", "size": 65536, "bandwidth": 0, "latency": 3},
      {"name": "UB", "size": 131072, "bandwidth": 32},
      {"name": "REGFILE", "size": 4096, "bandwidth": 1024}
    ]},
    "intrinsics": [
      {"name": "mma", "unit": "matrix", "shape": {"m": 8, "k": 8, "n": 8},
       "operand_types": ["fp16", "fp16", "fp32"], "throughput": 1},
      {"name": "mma_s8", "unit": "matrix", "shape": {"m": 8, "k": 16, "n": 8},
       "operand_types": ["int8", "int8", "int32"], "throughput": 1},
      {"name": "vadd", "unit": "vector", "operand_types": ["fp16"], "throughput": 64},
      {"name": "vadd32", "unit": "vector", "operand_types": ["fp32"], "throughput": 40},
      {"name": "sadd", "unit": "scalar", "operand_types": ["int32"], "throughput": 1}
    ]
  })");
}

std::string error_for(const std::function<void(Json&)>& edit) {
  Json j = description();
  edit(j);
  return bad_input_message([&] { target_from_json(j); });
}

TEST(HardwareDescriptionTest, EverySectionMapsOntoTheTarget) {
  const Target t = target_from_json(description());
  EXPECT_EQ(t.name, "test-npu");
  EXPECT_EQ(t.organisation, "coupled");
  EXPECT_EQ(t.ai_cores, 4);
  EXPECT_EQ(t.vector_cores, 4);  // coupled: one vector unit per core
  EXPECT_DOUBLE_EQ(t.clock_ghz, 1.2);
  EXPECT_EQ(t.cube_m, 8);
  EXPECT_EQ(t.cube_k, 8);
  EXPECT_EQ(t.cube_n, 8);
  EXPECT_DOUBLE_EQ(t.int8_rate, 2.0);    // 8x16x8 over 8x8x8
  EXPECT_DOUBLE_EQ(t.fp32_rate, 0.25);   // no fp32 intrinsic: the default, noted as an estimate
  EXPECT_THAT(t.source["fp32_rate"].get<std::string>(), HasSubstr("est."));
  EXPECT_DOUBLE_EQ(t.vector_bytes_per_cycle, 160);  // widest: 40 fp32 elements x 4 B
  EXPECT_EQ(t.device_memory_bytes, 2147483648);
  EXPECT_DOUBLE_EQ(t.hbm_bytes_per_cycle, 40);
  EXPECT_DOUBLE_EQ(t.hbm_latency_cycles, 300);
  EXPECT_EQ(t.l2_bytes, 0);  // no L2 level
  EXPECT_EQ(t.l1_bytes, 262144);
  EXPECT_DOUBLE_EQ(t.mte2_bytes_per_cycle, 32);
  EXPECT_DOUBLE_EQ(t.mte2_copy_start_cycles, 90);
  EXPECT_DOUBLE_EQ(t.mte1_a_bytes_per_cycle, 128);
  EXPECT_DOUBLE_EQ(t.mte1_b_bytes_per_cycle, 96);
  EXPECT_DOUBLE_EQ(t.mte1_start_cycles, 12);
  EXPECT_EQ(t.l0c_bytes, 65536);
  EXPECT_DOUBLE_EQ(t.fixpipe_bytes_per_cycle, 0);
  EXPECT_DOUBLE_EQ(t.mte3_bytes_per_cycle, 32);
  EXPECT_THAT(t.source["l1_bytes"].get<std::string>(), HasSubstr("memory.hierarchy[1].size"));
}

TEST(HardwareDescriptionTest, FieldsTheSimulatorDoesNotUseAreListed) {
  const std::string ignored = target_from_json(description()).source["ignored"].get<std::string>();
  for (const char* f : {"vendor", "architecture.pipeline_depth", "memory.hierarchy[4].latency",
                        "memory.hierarchy[6] (REGFILE: no role)", "intrinsics[4] (sadd: unit 'scalar'"}) {
    EXPECT_THAT(ignored, HasSubstr(f));
  }
  EXPECT_THAT(ignored, Not(HasSubstr("hierarchy[2]")));  // L0A: every field used
}

TEST(HardwareDescriptionTest, SplitPartsNeedTheirVectorCores) {
  EXPECT_THAT(error_for([](Json& j) { j["architecture"]["core_type"] = "split"; }),
              HasSubstr("'architecture.vector_cores' is missing"));
  Json j = description();
  j["architecture"]["core_type"] = "split";
  j["architecture"]["vector_cores"] = 8;
  EXPECT_EQ(target_from_json(j).vector_cores, 8);
}

TEST(HardwareDescriptionTest, UnmappableFieldsAreNamedByTheirPath) {
  EXPECT_THAT(error_for([](Json& j) { j["architecture"]["core_type"] = "systolic"; }),
              HasSubstr("'architecture.core_type' must be \"coupled\""));
  EXPECT_THAT(error_for([](Json& j) { j["architecture"].erase("clock_ghz"); }),
              HasSubstr("'architecture.clock_ghz' is missing"));
  EXPECT_THAT(error_for([](Json& j) { j["memory"]["hierarchy"][1]["size"] = "big"; }),
              HasSubstr("'memory.hierarchy[1].size' must be an integer, got \"big\""));
  EXPECT_THAT(error_for([](Json& j) { j["memory"]["hierarchy"][1]["role"] = "L3"; }),
              HasSubstr("'memory.hierarchy[1].role' must be one of DRAM"));
  EXPECT_THAT(error_for([](Json& j) { j["memory"]["hierarchy"].erase(5); }),
              HasSubstr("'memory.hierarchy' has no UB level"));
  EXPECT_THAT(error_for([](Json& j) { j["memory"]["hierarchy"][6]["role"] = "L0A"; }),
              HasSubstr("'memory.hierarchy[6]' is a second L0A level (the first is memory.hierarchy[2])"));
  EXPECT_THAT(error_for([](Json& j) { j["intrinsics"][0]["shape"].erase("k"); }),
              HasSubstr("'intrinsics[0].shape.k' is missing"));
  EXPECT_THAT(error_for([](Json& j) { j["intrinsics"][1]["operand_types"][0] = "fp9"; }),
              HasSubstr("'intrinsics[1].operand_types[0]' must be one of fp16"));
  EXPECT_THAT(error_for([](Json& j) { j["intrinsics"][0]["throughput"] = 2; }),
              HasSubstr("'intrinsics[0].throughput' must be 1"));
  EXPECT_THAT(error_for([](Json& j) { j["intrinsics"].erase(0); }),
              HasSubstr("'intrinsics' has no matrix intrinsic with fp16"));
  EXPECT_THAT(error_for([](Json& j) { j["intrinsics"].erase(2); j["intrinsics"].erase(2); }),
              HasSubstr("'intrinsics' has no vector intrinsic"));
  EXPECT_THAT(error_for([](Json& j) { j["memory"] = Json::array(); }), HasSubstr("'memory' must be an object"));
}

TEST(HardwareDescriptionTest, NumbersKeepTheTargetBoundsUnderTheirOwnPath) {
  EXPECT_THAT(error_for([](Json& j) { j["architecture"]["cores"] = 0; }),
              HasSubstr("'architecture.cores' must be an integer in 1..4096, got 0"));
  EXPECT_THAT(error_for([](Json& j) { j["intrinsics"][0]["shape"]["m"] = 4096; }),
              HasSubstr("'intrinsics[0].shape.m' must be an integer in 1..1024"));
  EXPECT_THAT(error_for([](Json& j) { j["memory"]["hierarchy"][0]["size"] = -1; }),
              HasSubstr("'memory.hierarchy[0].size' must be an integer in 0..1125899906842624"));
  EXPECT_THAT(error_for([](Json& j) { j["memory"]["hierarchy"][2]["bandwidth"] = 0; }),
              HasSubstr("'memory.hierarchy[2].bandwidth' must be > 0"));
  EXPECT_THAT(error_for([](Json& j) { j["memory"]["hierarchy"][0]["latency"] = 1e12; }),
              HasSubstr("'memory.hierarchy[0].latency' must be >= 0 and <= 1000000000"));
  EXPECT_THAT(error_for([](Json& j) { j["intrinsics"][1]["throughput"] = 100; }),
              HasSubstr("'intrinsics[1]' (MACs per cycle over the fp16 intrinsic's) must be > 0 and <= 64"));
}

// The example is the ascend910b preset written in this format: the same Target but for
// its name and notes, so every figure went to the right field.
TEST(HardwareDescriptionTest, TheSeedFormatExampleIsTheAscend910bPreset) {
  Target t = load_target(std::string(ATVOSS_SOURCE_DIR) + "/examples/targets/seed-format-910b.json");
  EXPECT_THAT(t.source["ignored"].get<std::string>(), HasSubstr("vendor"));
  t.name = "ascend910b";
  EXPECT_EQ(t.key(), preset("ascend910b").key());  // every field but source and capacity
  EXPECT_EQ(t.device_memory_bytes, preset("ascend910b").device_memory_bytes);
  const Target edge = load_target(std::string(ATVOSS_SOURCE_DIR) + "/examples/targets/custom-npu-8x8.json");
  EXPECT_EQ(edge.cube_m, 8);
  EXPECT_EQ(edge.cube_k, 8);
  EXPECT_EQ(edge.device_memory_bytes, 4LL << 30);
}

TEST(HardwareDescriptionTest, DeviceMemoryIsOptionalBoundedAndOutsideTheKey) {
  Target t = preset("ascend910b");
  Json j = t.to_json();
  j.erase("device_memory_bytes");
  EXPECT_EQ(Target::from_json(j).device_memory_bytes, 0);  // not given: no fit check
  EXPECT_EQ(Target::from_json(j).key(), t.key());          // capacity does not change a kernel's time
  j["device_memory_bytes"] = -5;
  EXPECT_THAT(bad_input_message([&] { Target::from_json(j); }),
              HasSubstr("'device_memory_bytes' must be an integer in 0..1125899906842624, got -5"));
}

}  // namespace
}  // namespace atvoss::simulator
