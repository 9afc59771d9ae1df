// Presets and target loading: docs/hardware-facts.md section 1 figures, source notes,
// preset-plus-overrides, and the errors a bad description gets.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bad_input_message.hpp"
#include "core/error.hpp"
#include "core/launch_mode.hpp"
#include "simulator/presets.hpp"

namespace atvoss::simulator {
namespace {

using ::testing::HasSubstr;

TEST(PresetsTest, FiguresFromCalibrationSection1) {
  const Target b = preset("ascend910b");
  EXPECT_EQ(b.organisation, "split");
  EXPECT_EQ(b.ai_cores, 24);
  EXPECT_EQ(b.vector_cores, 48);
  EXPECT_EQ(b.l0c_bytes, 128 * 1024);
  EXPECT_EQ(b.l1_bytes, 512 * 1024);
  EXPECT_EQ(b.ub_bytes, 192 * 1024);
  EXPECT_DOUBLE_EQ(b.hbm_bytes_per_cycle, 850);
  EXPECT_DOUBLE_EQ(b.mte2_copy_start_cycles, 210);
  // 353.9 TFLOPS derived at 1.8 GHz.
  EXPECT_NEAR(b.peak_flops(DType::float16) / 1e12, 353.9, 0.5);
  const Target a = preset("ascend910");
  EXPECT_EQ(a.ai_cores, 32);
  EXPECT_EQ(a.max_buffers_per_queue, 4);
  EXPECT_NEAR(a.peak_flops(DType::float16) / 1e12, 262.1, 0.5);
  EXPECT_EQ(preset("ascend310").ai_cores, 2);
}

// Section 1.1: one MLU370 chip is half the MLU370-X8 card's published figures.
TEST(PresetsTest, Mlu370IsHalfTheX8Card) {
  const Target m = preset("mlu370");
  EXPECT_NEAR(m.peak_flops(DType::float16) / 1e12, 48.0, 0.1);
  EXPECT_NEAR(m.peak_flops(DType::int8) / 1e12, 128.0, 0.3);
  EXPECT_NEAR(m.peak_flops(DType::float32) / 1e12, 16.0, 0.1);
  EXPECT_NEAR(m.hbm_bytes_per_second() / 1e9, 307.2, 0.1);
  EXPECT_EQ(m.device_memory_bytes, 24LL << 30);
  EXPECT_EQ(m.cube_m, 8);
  EXPECT_THAT(m.source["cube"].get<std::string>(), HasSubstr("estimate"));
  EXPECT_THAT(m.source["clock_ghz"].get<std::string>(), HasSubstr("est."));
}

TEST(PresetsTest, EveryPresetHasItsDeviceMemory) {
  for (const auto& name : preset_names()) {
    SCOPED_TRACE(name);
    EXPECT_GT(preset(name).device_memory_bytes, 1LL << 30);
    EXPECT_TRUE(preset(name).source.contains("device_memory_bytes"));
  }
  EXPECT_EQ(preset("ascend910b").device_memory_bytes, 64LL << 30);
}

TEST(PresetsTest, EveryPresetNotesItsSourcesAndMarksEstimates) {
  for (const auto& name : preset_names()) {
    SCOPED_TRACE(name);
    const Target t = preset(name);
    EXPECT_EQ(Target::from_json(t.to_json()).key(), t.key());  // valid as JSON, round trips
    for (const char* field : {"ai_cores", "clock_ghz", "l1_bytes", "hbm_bytes_per_cycle", "mte2_bytes_per_cycle",
                              "launch_us", "max_buffers_per_queue"}) {
      EXPECT_TRUE(t.source.contains(field)) << field;
    }
  }
  EXPECT_THAT(preset("ascend910").source["clock_ghz"].get<std::string>(), HasSubstr("est."));
  EXPECT_THAT(preset("ascend910b").source["l2_bytes"].get<std::string>(), Not(HasSubstr("est.")));
}

TEST(PresetsTest, LoadsNameInlineFileAndOverrides) {
  EXPECT_EQ(load_target("ascend910").name, "ascend910");
  const Target o = load_target(R"({"preset":"ascend910b","clock_ghz":1.85,"ai_cores":1})");
  EXPECT_EQ(o.name, "ascend910b+custom");
  EXPECT_DOUBLE_EQ(o.clock_ghz, 1.85);
  EXPECT_EQ(o.ai_cores, 1);
  EXPECT_EQ(o.l1_bytes, preset("ascend910b").l1_bytes);
  EXPECT_EQ(o.source["clock_ghz"], "user override");
  EXPECT_NE(o.key(), preset("ascend910b").key());

  const auto path = std::filesystem::temp_directory_path() / "atvoss_presets_test_target.json";
  std::ofstream(path) << preset("ascend310").to_json().dump();
  EXPECT_EQ(load_target(path.string()).key(), preset("ascend310").key());
  std::filesystem::remove(path);
}

// The Ascend presets run sunk graphs at 1 us a kernel (est.), mlu370 gives no such cost; a
// preset overridden to launch sunk by default takes that cost as its launch.
TEST(PresetsTest, AscendPresetsRunSunkGraphsAndAnOverrideMakesItTheirDefault) {
  for (const char* name : {"ascend910", "ascend910b", "ascend310"}) {
    const Target t = load_target(name);
    EXPECT_EQ(t.sunk_launch_us, 1.0) << name;
    EXPECT_EQ(t.launch, "host") << name;
    EXPECT_TRUE(t.source.contains("sunk_launch_us")) << name;
  }
  EXPECT_EQ(load_target("mlu370").sunk_launch_us, 0.0);
  const Target sunk = load_target(R"({"preset":"ascend910b","launch":"sunk"})");
  EXPECT_EQ(sunk.launch, "sunk");
  EXPECT_EQ(sunk.launch_us, 1.0);
  EXPECT_EQ(sunk.name, "ascend910b+custom");  // not the stock preset, so its own key
  EXPECT_EQ(launched(sunk, LaunchMode::sunk, "f").key(), sunk.key());
}

TEST(PresetsTest, BadDescriptionsNameTheField) {
  const struct {
    const char* name;
    std::string arg;
    const char* expect;
  } cases[] = {
      {"unknown preset", "ascend999", "unknown preset 'ascend999'"},
      {"malformed json", R"({"preset":"ascend910b",)", "invalid JSON"},
      {"unknown override", R"({"preset":"ascend910b","clok_ghz":2})", "clok_ghz"},
      {"mistyped override", R"({"preset":"ascend910b","ai_cores":"many"})", "ai_cores"},
      {"negative override", R"({"preset":"ascend910b","l1_bytes":-1})", "l1_bytes"},
      {"preset not a string", R"({"preset":3})", "preset"},
      {"missing field",
       [] {
         Json j = preset("ascend910").to_json();
         j.erase("ub_bytes");
         return j.dump();
       }(),
       "ub_bytes"},
      {"missing file", "/nonexistent/target.json", "unknown preset"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(bad_input_message([&] { load_target(c.arg); }), HasSubstr(c.expect));
  }
}

}  // namespace
}  // namespace atvoss::simulator
