// Sensitivity analysis on a small MLP-like chain run with the real int8, bf16 and fp32 kernels:
// the errors are small but real, bf16 loses less than int8, clipping calibration helps on
// outliers, plans follow their threshold, a plan's chain error is what its layers explain,
// and the same seed gives the same numbers. Plan selection and bad input need no kernels.
#include "runtime/sensitivity.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "core/error.hpp"
#include "host/machine.hpp"

namespace atvoss::runtime {
namespace {

// The zoo's mlp shrunk: 16 rows, 256 -> 128 -> 64 -> 10.
std::vector<SensitivityLayer> small_mlp() {
  return {{"fc1", matmul_workload(16, 128, 256, {"bias", "relu"})},
          {"fc2", matmul_workload(16, 64, 128, {"bias", "relu"})},
          {"fc3", matmul_workload(16, 10, 64, {"bias"})}};
}

SensitivityOptions options(host::CalibrationMethod method = host::CalibrationMethod::min_max, std::uint64_t seed = 7) {
  SensitivityOptions o;
  o.seed = seed;
  o.calibration.method = method;
  o.calibration_rows = 256;
  o.timed_calls = 3;
  return o;
}

// Expects bad_input whose message names `field`.
template <typename F>
void expect_bad_input(F&& f, const std::string& field) {
  try {
    f();
    ADD_FAILURE() << "no error; expected bad_input naming " << field;
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input()) << e.what();
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

class SensitivityKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* flag : {"avx512_vnni", "avx512_bf16"}) {
      if (!host::this_machine().has_flag(flag)) GTEST_SKIP() << "this CPU lacks " << flag;
    }
  }
  // Measured once per suite: the chain's kernels compile on first use.
  static const std::vector<LayerSensitivity>& mlp() {
    static const std::vector<LayerSensitivity> s = measure_sensitivity(runtime(), small_mlp(), options());
    return s;
  }
  static Runtime& runtime() {
    static Runtime rt;
    return rt;
  }
};

TEST_F(SensitivityKernels, ChainedMlpErrorsAreSmallButRealAndBf16LosesLess) {
  const auto& s = mlp();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_FALSE(s[0].chained);
  EXPECT_TRUE(s[1].chained);
  EXPECT_TRUE(s[2].chained);
  for (const auto& l : s) {
    EXPECT_GT(l.int8_error, 1e-4) << l.name;
    EXPECT_LT(l.int8_error, 0.1) << l.name;
    EXPECT_GT(l.bf16_error, 0) << l.name;
    EXPECT_LT(l.bf16_error, l.int8_error) << l.name;
    EXPECT_GE(l.saturation, 0) << l.name;
    EXPECT_LT(l.saturation, 0.01) << l.name;
    EXPECT_GT(l.fp32_us, 0) << l.name;
    EXPECT_GT(l.int8_us, 0) << l.name;
    EXPECT_GT(l.bf16_us, 0) << l.name;
  }
}

// A chained layer is calibrated on ReLU outputs, which are never negative; the first layer
// on the drawn, two-sided input.
TEST_F(SensitivityKernels, ChainedLayersAreCalibratedOnTheReluOutputs) {
  const auto& s = mlp();
  EXPECT_LT(s[0].act_range.lo, -1);
  EXPECT_EQ(s[1].act_range.lo, 0);
  EXPECT_EQ(s[2].act_range.lo, 0);
  EXPECT_GT(s[1].act_range.hi, 0);
}

// One input value in 10,000 is ten times the bulk: min_max spends int8's 256 steps on the
// range of the outliers the calibration batches caught; percentile and entropy clip them and
// resolve the bulk finer, which pays on a 16-row batch that holds few outliers. On average
// over seeds, that is: a batch with outliers beyond the clipped range can go the other way.
TEST_F(SensitivityKernels, ClippingCalibrationBeatsMinMaxOnOutliers) {
  const std::vector<SensitivityLayer> layer = {small_mlp()[0]};
  double min_max = 0, percentile = 0, entropy = 0;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const auto wide = measure_sensitivity(runtime(), layer, options(host::CalibrationMethod::min_max, seed))[0];
    const auto p = measure_sensitivity(runtime(), layer, options(host::CalibrationMethod::percentile, seed))[0];
    const auto e = measure_sensitivity(runtime(), layer, options(host::CalibrationMethod::entropy, seed))[0];
    EXPECT_LT(e.act_range.hi - e.act_range.lo, wide.act_range.hi - wide.act_range.lo) << "seed " << seed;
    EXPECT_EQ(e.bf16_error, wide.bf16_error) << "the range only touches int8; seed " << seed;
    min_max += wide.int8_error;
    percentile += p.int8_error;
    entropy += e.int8_error;
  }
  EXPECT_LT(percentile, min_max);
  EXPECT_LT(entropy, min_max);
}

TEST_F(SensitivityKernels, ThresholdZeroKeepsFp32AndAHugeOneMakesAllInt8) {
  const auto& s = mlp();
  const MixedPrecisionPlan fp32 = plan_precision(s, 0, true);
  double fp32_us = 0, int8_us = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(fp32.layers[i].dtype, DType::float32) << s[i].name;
    fp32_us += s[i].fp32_us;
    int8_us += s[i].int8_us;
  }
  EXPECT_DOUBLE_EQ(fp32.time_us, fp32_us);
  EXPECT_DOUBLE_EQ(fp32.speedup(), 1.0);
  const MixedPrecisionPlan int8 = plan_precision(s, 1e9, true);
  for (const auto& l : int8.layers) EXPECT_EQ(l.dtype, DType::int8) << l.name;
  EXPECT_DOUBLE_EQ(int8.time_us, int8_us);
  EXPECT_DOUBLE_EQ(int8.fp32_time_us, fp32_us);
}

// All fp32: the chain is the reference itself. Only the last layer in int8: its input is the
// very fp32 activation it was measured on, so the chain's error is that layer's own. All
// int8: each layer passes its input's relative error on with gain about 1 (unit-variance
// weights) and adds its own, so the total stays within the sum of the layers' errors (twice
// that, for the gains' spread), and above the bf16 chain's.
TEST_F(SensitivityKernels, ChainedErrorIsWhatThePlansLayersExplain) {
  const auto& s = mlp();
  const auto layers = small_mlp();
  EXPECT_EQ(chained_error(runtime(), layers, plan_precision(s, 0, true), options()), 0.0);

  MixedPrecisionPlan last_int8 = plan_precision(s, 0, true);
  last_int8.layers[2].dtype = DType::int8;
  EXPECT_DOUBLE_EQ(chained_error(runtime(), layers, last_int8, options()), s[2].int8_error);

  const MixedPrecisionPlan int8 = plan_precision(s, 1e9, true);
  const double all_int8 = chained_error(runtime(), layers, int8, options());
  double sum = 0;
  for (const auto& l : s) sum += l.int8_error;
  EXPECT_GT(all_int8, s[2].int8_error / 2);
  EXPECT_LT(all_int8, 2 * sum);

  MixedPrecisionPlan bf16 = int8;
  for (auto& l : bf16.layers) l.dtype = DType::bfloat16;
  const double all_bf16 = chained_error(runtime(), layers, bf16, options());
  EXPECT_GT(all_bf16, 0);
  EXPECT_LT(all_bf16, all_int8);
}

// Each layer within the threshold does not keep the chain within it: plan_chain promotes layers
// until the measured end-to-end error is. Seen failing with the promotion loop removed.
TEST_F(SensitivityKernels, AChainPlanMeasuresWithinItsThreshold) {
  const auto& s = mlp();
  const auto layers = small_mlp();
  const double all_int8 = chained_error(runtime(), layers, plan_precision(s, 1e9, true), options());
  double largest_own = 0;
  for (const auto& l : s) largest_own = std::max(largest_own, l.int8_error);
  ASSERT_GT(all_int8, largest_own) << "the chain compounds its layers' errors";
  // Every layer's own error is within it, the chain's is not.
  const double threshold = 0.5 * (largest_own + all_int8);
  double error = -1;
  const MixedPrecisionPlan plan = plan_chain(runtime(), layers, s, threshold, true, options(), &error);
  EXPECT_LE(error, threshold);
  EXPECT_EQ(error, chained_error(runtime(), layers, plan, options()));
  int promoted = 0;
  for (const auto& l : plan.layers) promoted += l.dtype != DType::int8 ? 1 : 0;
  EXPECT_GE(promoted, 1);
  EXPECT_LT(promoted, 3) << "one step up is enough here; all fp32 would be too cautious";
}

TEST_F(SensitivityKernels, SameSeedSameNumbersOtherSeedOthers) {
  const auto& s = mlp();
  const auto again = measure_sensitivity(runtime(), small_mlp(), options());
  const auto other = measure_sensitivity(runtime(), small_mlp(), options(host::CalibrationMethod::min_max, 8));
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(again[i].int8_error, s[i].int8_error) << s[i].name;
    EXPECT_EQ(again[i].bf16_error, s[i].bf16_error) << s[i].name;
    EXPECT_EQ(again[i].act_range.hi, s[i].act_range.hi) << s[i].name;
    EXPECT_NE(other[i].int8_error, s[i].int8_error) << s[i].name;
  }
}

// Plan selection on given numbers: no kernels.
LayerSensitivity layer(const std::string& name, double int8, double bf16) {
  LayerSensitivity l;
  l.name = name;
  l.int8_error = int8;
  l.bf16_error = bf16;
  l.fp32_us = 100;
  l.bf16_us = 50;
  l.int8_us = 25;
  return l;
}

TEST(SensitivityPlan, EachLayerTakesTheCheapestPrecisionWithinTheThreshold) {
  const std::vector<LayerSensitivity> s = {layer("a", 0.005, 0.001), layer("b", 0.02, 0.002), layer("c", 0.2, 0.05)};
  const MixedPrecisionPlan p = plan_precision(s, 0.01, true);
  EXPECT_EQ(p.layers[0].dtype, DType::int8);
  EXPECT_EQ(p.layers[1].dtype, DType::bfloat16);
  EXPECT_EQ(p.layers[2].dtype, DType::float32);
  EXPECT_DOUBLE_EQ(p.layers[1].error, 0.002);
  EXPECT_DOUBLE_EQ(p.time_us, 25 + 50 + 100);
  EXPECT_DOUBLE_EQ(p.speedup(), 300.0 / 175.0);
  // Without bf16 (or where it was not measured: NaN) the middle layer stays fp32.
  EXPECT_EQ(plan_precision(s, 0.01, false).layers[1].dtype, DType::float32);
  const std::vector<LayerSensitivity> unmeasured = {layer("b", 0.02, std::numeric_limits<double>::quiet_NaN())};
  EXPECT_EQ(plan_precision(unmeasured, 0.01, true).layers[0].dtype, DType::float32);
}

TEST(SensitivityPlan, PrecisionConfigIsTheJobSpecsPerLayerForm) {
  const std::vector<LayerSensitivity> s = {layer("fc1", 0.005, 0.001), layer("fc2", 0.02, 0.002),
                                           layer("fc3", 0.2, 0.05)};
  const Json expected = parse_json(R"({"fc1": {"weight": 8, "act": 8},
      "fc2": {"weight": 16, "act": 16, "type": "bfloat16"}, "fc3": {"weight": 32, "act": 32}})",
                                   "expected");
  EXPECT_EQ(precision_config(plan_precision(s, 0.01, true)), expected);
}

TEST(SensitivityInput, BadInputNamesTheField) {
  Runtime rt;
  const SensitivityOptions o = options();
  expect_bad_input([&] { measure_sensitivity(rt, {}, o); }, "'layers'");
  const Workload bmm = batch_matmul_workload(2, 16, 16, 16);
  expect_bad_input([&] { measure_sensitivity(rt, {{"x", bmm}}, o); }, "'layers[0].workload'");
  const Workload int8 = matmul_workload(16, 16, 16, {}, DType::int8);
  expect_bad_input([&] { measure_sensitivity(rt, {small_mlp()[0], {"y", int8}}, o); }, "'layers[1].workload'");
  const auto layernorm = Workload::from_json(
      parse_json(R"({"op":"matmul","dims":{"M":16,"N":16,"K":16},"epilogue":["bias","layernorm"]})", "w"));
  expect_bad_input([&] { measure_sensitivity(rt, {{"z", layernorm}}, o); }, "'layers[0].workload'");
  // A matmul that quantizes its own output is no fp32 layer (a job's report measures none).
  const auto quantized = Workload::from_json(
      parse_json(R"({"op":"matmul","dims":{"M":16,"N":16,"K":16},"epilogue":["bias","quantize"]})", "w"));
  std::string why;
  EXPECT_FALSE(sensitivity_layer_supported(quantized, &why));
  EXPECT_THAT(why, ::testing::HasSubstr("quantize"));
  EXPECT_TRUE(sensitivity_layer_supported(small_mlp()[0].workload));
  expect_bad_input([&] { measure_sensitivity(rt, {{"q", quantized}}, o); }, "'layers[0].workload'");
  expect_bad_input([&] { measure_sensitivity(rt, {small_mlp()[0], small_mlp()[0]}, o); }, "'layers[1].name'");
  SensitivityOptions no_rows = o;
  no_rows.calibration_rows = 0;
  expect_bad_input([&] { measure_sensitivity(rt, small_mlp(), no_rows); }, "'calibration_rows'");

  const std::vector<LayerSensitivity> s = {layer("a", 0.01, 0.001)};
  expect_bad_input([&] { plan_precision({}, 0.01, true); }, "'layers'");
  for (double t : {-0.01, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()})
    expect_bad_input([&] { plan_precision(s, t, true); }, "'threshold'");

  // Two layers whose shapes do not chain, and a plan of other layers.
  const std::vector<SensitivityLayer> unchained = {small_mlp()[0], small_mlp()[2]};
  MixedPrecisionPlan two = plan_precision({layer("fc1", 0, 0), layer("fc3", 0, 0)}, 0, true);
  expect_bad_input([&] { chained_error(rt, unchained, two, o); }, "'layers'");
  expect_bad_input([&] { chained_error(rt, small_mlp(), two, o); }, "'layers'");
}

}  // namespace
}  // namespace atvoss::runtime
