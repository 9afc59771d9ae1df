// Seed-format hardware descriptions (simulator/hardware_description.hpp): what each
// section becomes in the Target, what is listed as ignored, the errors that name the
// field by its dotted path, and the articles' short form (a vector-only chip with
// stated defaults) loading and simulating.
#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bad_input_message.hpp"
#include "core/error.hpp"
#include "simulator/hardware_description.hpp"
#include "simulator/presets.hpp"
#include "simulator/simulator.hpp"
#include "test_workloads.hpp"

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
  EXPECT_DOUBLE_EQ(t.int8_rate, 2.0);   // 8x16x8 over 8x8x8
  EXPECT_DOUBLE_EQ(t.fp32_rate, 0.25);  // no fp32 intrinsic: the default, noted as an estimate
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
  EXPECT_THAT(error_for([](Json& j) {
                j["intrinsics"].erase(2);
                j["intrinsics"].erase(2);
              }),
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

// The description exactly as the ATVOSS articles print it: no name, memory under
// architecture, levels as names with a parallel latency list, a vector-only core whose
// one intrinsic has vector operand types under "operands" and no unit.
const char* kArticle = R"({"architecture": {"core_type": "simd_vector",
                  "memory": {"hierarchy": ["RF", "L0", "L1"], "latency": [1, 8, 32]}},
 "intrinsics": [{"name": "vmac", "throughput": 2, "operands": ["float32x8", "float32x8"]}]})";

std::string article_error(const std::function<void(Json&)>& edit) {
  Json j = Json::parse(kArticle);
  edit(j);
  return bad_input_message([&] { target_from_json(j); });
}

TEST(HardwareDescriptionTest, TheArticlesShortFormLoadsWithItsDefaultsNoted) {
  const Target t = load_target(std::string(ATVOSS_SOURCE_DIR) + "/examples/targets/article-simd-vector.json");
  EXPECT_EQ(t.key(), target_from_json(Json::parse(kArticle)).key());  // the example is the article's text
  // Mapped from the description.
  EXPECT_EQ(t.name.rfind("described-", 0), 0u) << t.name;  // no name: derived from the content
  EXPECT_EQ(t.organisation, "coupled");                    // simd_vector: one vector unit per core, no matrix unit
  EXPECT_DOUBLE_EQ(t.vector_bytes_per_cycle, 64);          // 2 per cycle x 8 lanes x 4 B
  EXPECT_EQ(t.cube_m, 1);  // the vector unit's 16 fp32 MACs per cycle run the matrix work
  EXPECT_EQ(t.cube_n, 16);
  EXPECT_EQ(t.cube_k, 1);
  EXPECT_EQ(t.matrix_dtypes, std::vector<DType>{DType::float32});
  EXPECT_DOUBLE_EQ(t.mte2_copy_start_cycles, 32);  // L1's latency
  EXPECT_THAT(t.source["mte2_copy_start_cycles"].get<std::string>(), HasSubstr("architecture.memory.latency[2]"));
  EXPECT_DOUBLE_EQ(t.fixpipe_bytes_per_cycle, 0);  // results leave through the vector unit
  EXPECT_EQ(t.l2_bytes, 0);
  EXPECT_EQ(t.device_memory_bytes, 0);  // not given: no fit check, rather than a made-up capacity
  // Defaults: one core, the ascend910b preset's figures, each noted as an estimate.
  EXPECT_EQ(t.ai_cores, 1);
  EXPECT_EQ(t.vector_cores, 1);
  EXPECT_DOUBLE_EQ(t.clock_ghz, 1.8);
  EXPECT_EQ(t.ub_bytes, 192 * 1024);  // the "L0" the vector unit works in
  EXPECT_EQ(t.l1_bytes, 512 * 1024);
  EXPECT_EQ(t.l0a_bytes, 64 * 1024);
  EXPECT_EQ(t.l0c_bytes, 128 * 1024);
  EXPECT_DOUBLE_EQ(t.mte2_bytes_per_cycle, 64);
  EXPECT_DOUBLE_EQ(t.hbm_bytes_per_cycle, 850.0 / 24);  // the 910B's per-core share
  EXPECT_DOUBLE_EQ(t.hbm_latency_cycles, 347);
  EXPECT_DOUBLE_EQ(t.fp32_rate, 1);
  for (const char* f : {"clock_ghz", "ai_cores", "ub_bytes", "l1_bytes", "hbm_bytes_per_cycle", "fp32_rate"}) {
    EXPECT_THAT(t.source[f].get<std::string>(), HasSubstr("est.")) << f;
  }
  EXPECT_THAT(t.source["ub_bytes"].get<std::string>(),
              HasSubstr("architecture.memory.hierarchy[1] (L0) gives no size"));
  const std::string defaults = t.source["defaults"].get<std::string>();
  for (const char* d : {"name = \"described-", "ai_cores = 1", "clock_ghz = 1.8", "ub_bytes = 196608",
                        "l0a_bytes = 65536", "hbm_latency_cycles = 347", "intrinsics[0].unit = \"vector\""}) {
    EXPECT_THAT(defaults, HasSubstr(d));
  }
  EXPECT_THAT(defaults, Not(HasSubstr("mte2_copy_start_cycles")));  // given, not assumed
  const std::string ignored = t.source["ignored"].get<std::string>();
  for (const char* f : {"architecture.memory.hierarchy[0] (RF: no role)", "architecture.memory.latency[0]",
                        "architecture.memory.latency[1]"}) {
    EXPECT_THAT(ignored, HasSubstr(f));
  }
}

// Required figures that are absent are named together, never one at a time.
TEST(HardwareDescriptionTest, MissingFiguresAreRefusedAllAtOnce) {
  const std::string full = error_for([](Json& j) {
    j["architecture"].erase("clock_ghz");
    j["architecture"].erase("cores");
    j["memory"]["hierarchy"][1].erase("size");
    j["memory"]["hierarchy"].erase(5);  // UB
    j["intrinsics"][2].erase("throughput");
  });
  EXPECT_THAT(full, HasSubstr("5 required fields are missing"));
  for (const char* f : {"'architecture.cores' is missing", "'architecture.clock_ghz' is missing",
                        "'memory.hierarchy[1].size' is missing", "'memory.hierarchy' has no UB level",
                        "'intrinsics[2].throughput' is missing"}) {
    EXPECT_THAT(full, HasSubstr(f));
  }
  // The short form defaults the memory and the chip, but not what the intrinsics are.
  const std::string article = article_error([](Json& j) {
    j["architecture"].erase("core_type");
    j["intrinsics"][0].erase("throughput");
    j["intrinsics"][0].erase("operands");
  });
  EXPECT_THAT(article, HasSubstr("3 required fields are missing"));
  for (const char* f : {"'architecture.core_type' is missing", "'intrinsics[0].throughput' is missing",
                        "'intrinsics[0].operand_types' is missing (or \"operands\")"}) {
    EXPECT_THAT(article, HasSubstr(f));
  }
}

TEST(HardwareDescriptionTest, TheArticlesFormNamesWhatItCannotMap) {
  EXPECT_THAT(article_error([](Json& j) { j["memory"] = j["architecture"]["memory"]; }),
              HasSubstr("'architecture.memory' repeats the top-level 'memory'"));
  EXPECT_THAT(article_error([](Json& j) {
                j["architecture"]["memory"]["latency"] = {1, 8};
              }),
              HasSubstr("'architecture.memory.latency' must be an array of one latency in cycles per level"));
  EXPECT_THAT(article_error([](Json& j) { j["intrinsics"][0]["operands"][1] = "float32x"; }),
              HasSubstr("'intrinsics[0].operands[1]' must be one of fp16"));
  EXPECT_THAT(article_error([](Json& j) { j["intrinsics"][0]["operand_types"] = {"fp32"}; }),
              HasSubstr("'intrinsics[0].operands' repeats 'operand_types'"));
  EXPECT_THAT(article_error([](Json& j) {
                j["intrinsics"].push_back(Json::parse(
                    R"({"name": "mma", "shape": {"m": 8, "k": 8, "n": 8}, "operands": ["fp16"], "throughput": 1})"));
              }),
              HasSubstr("'intrinsics[1]' is a matrix intrinsic, but core_type \"simd_vector\" has no matrix unit"));
}

// The vector-only chip runs vector work on its vector unit and matrix work at the vector
// unit's MAC rate (16 fp32 MACs per cycle on one core at 1.8 GHz).
TEST(HardwareDescriptionTest, TheArticlesVectorOnlyChipSimulates) {
  const Target t = target_from_json(Json::parse(kArticle));
  constexpr SimOptions kExact{.noise = 0, .repeat = 1, .seed = 0};
  for (const char* json :
       {R"({"op":"elementwise","dims":{"M":4096,"N":4096}})", R"({"op":"layernorm","dims":{"M":512,"N":768}})"}) {
    const Workload w = testing::workload(json);
    const Measurement m = simulate(t, w, default_schedule(w, t), kExact);
    ASSERT_TRUE(m.ok()) << json << ": " << m.message;
    EXPECT_GE(m.time_us, w.compulsory_bytes() / t.hbm_bytes_per_second() * 1e6) << json;
  }
  const Workload mm = testing::workload(R"({"op":"matmul","dims":{"M":1024,"N":1024,"K":1024},"dtype":"float32"})");
  const Measurement m = simulate(t, mm, default_schedule(mm, t), kExact);
  ASSERT_TRUE(m.ok()) << m.message;
  const double vector_macs_us = mm.flops() / (2 * 16 * 1.8e9) * 1e6;
  EXPECT_GE(m.time_us, vector_macs_us);
  EXPECT_LE(m.time_us, 1.5 * vector_macs_us);  // compute-bound on the vector unit
}

}  // namespace
}  // namespace atvoss::simulator
