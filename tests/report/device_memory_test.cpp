// Device memory fit (frontend/device_memory.hpp): the mlp's weights and peak activations
// counted by hand, and a job on a part too small for the model warns, reports it and
// still tunes.
#include "frontend/device_memory.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

#include "frontend/model_zoo.hpp"
#include "report/job_report.hpp"
#include "simulator/presets.hpp"

namespace atvoss::report {
namespace {

using namespace tuner;

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// mlp (batch 64, fp16): fc1 784x512, fc2 512x256, fc3 256x10.
constexpr double kMlpWeights = 2.0 * (784 * 512 + 512 * 256 + 256 * 10);
constexpr double kFc1Live = 2.0 * (64 * 784 + 64 * 512);  // input + output of the largest layer

Target with_capacity(std::int64_t bytes) {
  Target t = simulator::preset("ascend910");
  t.device_memory_bytes = bytes;
  return t;
}

TEST(DeviceMemoryTest, WeightsAndPeakActivationsOfTheMlp) {
  const frontend::MemoryFit f = frontend::memory_fit(frontend::zoo_model("mlp"), with_capacity(0));
  EXPECT_DOUBLE_EQ(f.weight_bytes, kMlpWeights);
  EXPECT_DOUBLE_EQ(f.peak_activation_bytes, kFc1Live);
  EXPECT_EQ(f.peak_layer, "fc1");
  EXPECT_TRUE(f.fits());  // no capacity: nothing to check against
  EXPECT_THAT(f.summary(), HasSubstr("no device memory capacity"));
}

TEST(DeviceMemoryTest, EveryLayerHoldsItsOwnWeights) {
  frontend::TaskSet two("two", 1);
  const Workload fc = Workload::from_json(Json::parse(R"({"op":"matmul","dims":{"M":8,"N":128,"K":256}})"));
  two.add(fc, "a");
  two.add(fc, "b");  // same shape, merged into one task of weight 2
  EXPECT_DOUBLE_EQ(frontend::memory_fit(two, with_capacity(0)).weight_bytes, 2 * 2.0 * 128 * 256);
  const Workload scores =
      Workload::from_json(Json::parse(R"({"op":"batch_matmul","dims":{"B":12,"M":128,"N":128,"K":64}})"));
  EXPECT_EQ(frontend::weight_bytes(scores), 0);  // both operands are activations
  const Workload residual =
      Workload::from_json(Json::parse(R"({"op":"matmul","dims":{"M":8,"N":128,"K":256},"epilogue":["add"]})"));
  EXPECT_DOUBLE_EQ(frontend::activation_bytes(residual), frontend::activation_bytes(fc) + 2.0 * 8 * 128);
}

TEST(DeviceMemoryTest, CapacityDecidesTheWarning) {
  const frontend::TaskSet mlp = frontend::zoo_model("mlp");
  const auto need = std::int64_t(kMlpWeights + kFc1Live);
  EXPECT_TRUE(frontend::memory_fit(mlp, with_capacity(need)).fits());
  EXPECT_EQ(frontend::memory_fit(mlp, with_capacity(need)).warning("x"), "");
  const frontend::MemoryFit small = frontend::memory_fit(mlp, with_capacity(need - 1));
  EXPECT_FALSE(small.fits());
  EXPECT_THAT(small.warning("tiny"), HasSubstr("does not fit in tiny's device memory"));
  EXPECT_THAT(small.summary(), HasSubstr("(100.0%)"));
  EXPECT_TRUE(frontend::memory_fit(mlp, simulator::preset("mlu370")).fits());
}

TEST(DeviceMemoryTest, AJobOnAPartTooSmallWarnsReportsAndStillTunes) {
  const fs::path dir = fs::temp_directory_path() /
                       ("atvoss-devmem-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const JobSpec spec =
      JobSpec::from_json(Json{{"name", "tiny"},
                              {"target", Json{{"preset", "ascend910"}, {"device_memory_bytes", 1048576}}},
                              {"model", "mlp"},
                              {"trials", 24},
                              {"strategy", "random"},
                              {"batch_size", 8},
                              {"cost_model", "linear"},
                              {"seed", 3},
                              {"database", (dir / "j.db").string()},
                              {"export", (dir / "t.json").string()},
                              {"report", (dir / "r.html").string()}});
  std::ostringstream warnings;
  JobRunOptions o;
  o.quiet = true;
  o.warnings = &warnings;
  const JobOutcome out = run_and_report(spec, o);
  EXPECT_THAT(warnings.str(), HasSubstr("warning: the model does not fit in ascend910+custom's device memory"));
  EXPECT_GT(out.measured, 0);  // a warning, not an error
  EXPECT_FALSE(out.memory.fits());
  EXPECT_EQ(out.summary["memory"]["fits"], false);
  EXPECT_DOUBLE_EQ(out.summary["memory"]["weight_bytes"].get<double>(), kMlpWeights);
  std::ifstream in(dir / "r.html");
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(html, HasSubstr("does not fit"));
  EXPECT_THAT(html, HasSubstr("of 1.0 MB device memory"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace atvoss::report
