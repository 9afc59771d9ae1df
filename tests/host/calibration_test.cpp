// Calibration (calibration.hpp): each method chooses the range it promises on data whose
// answer is known (exact order statistics, the N(0, 1) quantile, a uniform), the robust ones
// ignore outliers that min_max cannot, per-channel follows each column, the codes put 0 on
// the grid, and bad input is refused naming the field.
#include "host/calibration.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "core/error.hpp"

namespace atvoss::host {
namespace {

CalibrationOptions options(CalibrationMethod m, bool symmetric = false) {
  CalibrationOptions o;
  o.method = m;
  o.symmetric = symmetric;
  return o;
}

std::vector<float> normal(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<float> uniform(std::size_t n, float lo, float hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// The bulk of an activation plus a few huge values, on both sides.
std::vector<float> normal_with_outliers(std::size_t n, std::uint64_t seed) {
  std::vector<float> v = normal(n, seed);
  for (float x : {40.0f, -35.0f, 50.0f, -45.0f, 30.0f}) v.push_back(x);
  return v;
}

void expect_bad_input(const std::function<void()>& f, const std::string& field) {
  try {
    f();
    ADD_FAILURE() << "no error; expected bad input naming '" << field << "'";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input()) << e.what();
    EXPECT_NE(std::string(e.what()).find("'" + field + "'"), std::string::npos) << e.what();
  }
}

TEST(CalibrationTest, MinMaxIsTheSampleRangeAndHoldsZero) {
  const std::vector<float> mixed = {-1.5f, 2.0f, 0.25f, -0.5f};
  const QuantRange r = calibrate(mixed, options(CalibrationMethod::min_max));
  EXPECT_EQ(r.lo, -1.5f);
  EXPECT_EQ(r.hi, 2.0f);
  const std::vector<float> positive = {0.5f, 3.0f, 1.25f};
  EXPECT_EQ(calibrate(positive, options(CalibrationMethod::min_max)).lo, 0.0f);
  EXPECT_EQ(calibrate(positive, options(CalibrationMethod::min_max)).hi, 3.0f);
  const std::vector<float> negative = {-4.0f, -1.0f};
  EXPECT_EQ(calibrate(negative, options(CalibrationMethod::min_max)).lo, -4.0f);
  EXPECT_EQ(calibrate(negative, options(CalibrationMethod::min_max)).hi, 0.0f);
  const QuantRange s = calibrate(mixed, options(CalibrationMethod::min_max, true));
  EXPECT_EQ(s.lo, -2.0f);
  EXPECT_EQ(s.hi, 2.0f);
}

TEST(CalibrationTest, PercentileInterpolatesBetweenSortedSamples) {
  std::vector<float> v;
  for (int i = -50; i <= 50; ++i) v.push_back(float(i));
  CalibrationOptions o = options(CalibrationMethod::percentile);
  o.percentile = 90;  // 5% off each tail: the 5th and 95th of 101 sorted values
  EXPECT_FLOAT_EQ(calibrate(v, o).lo, -45.0f);
  EXPECT_FLOAT_EQ(calibrate(v, o).hi, 45.0f);
  o.symmetric = true;
  o.percentile = 74.5;  // sorted |x| is 0, 1, 1, ..., 50, 50: position 74.5 lies between 37 and 38
  EXPECT_FLOAT_EQ(calibrate(v, o).hi, 37.5f);
  EXPECT_FLOAT_EQ(calibrate(v, o).lo, -37.5f);
  o.percentile = 100;
  EXPECT_FLOAT_EQ(calibrate(v, o).hi, 50.0f);
}

TEST(CalibrationTest, PercentileIgnoresOutliersAndFindsTheNormalQuantile) {
  const std::vector<float> v = normal_with_outliers(100000, 11);
  CalibrationOptions o = options(CalibrationMethod::percentile, true);
  o.percentile = 99.9;  // P(|x| <= 3.2905) = 0.999 for N(0, 1)
  const QuantRange s = calibrate(v, o);
  EXPECT_NEAR(s.hi, 3.2905, 0.1);
  EXPECT_EQ(s.lo, -s.hi);
  o.symmetric = false;  // 0.05% off each tail: the same quantile on each side
  const QuantRange a = calibrate(v, o);
  EXPECT_NEAR(a.lo, -3.2905, 0.15);
  EXPECT_NEAR(a.hi, 3.2905, 0.15);
}

TEST(CalibrationTest, EntropyClipsOutliersAndQuantisesTheBulkBetterThanMinMax) {
  const std::vector<float> v = normal_with_outliers(100000, 12);
  const std::vector<float> bulk(v.begin(), v.end() - 5);
  const QuantRange mm = calibrate(v, options(CalibrationMethod::min_max, true));
  const QuantRange kl = calibrate(v, options(CalibrationMethod::entropy, true));
  EXPECT_EQ(mm.hi, 50.0f);
  EXPECT_GT(kl.hi, 3.5f);  // TensorRT's threshold for N(0, 1) is about 4 sigma
  EXPECT_LT(kl.hi, 5.0f);
  EXPECT_EQ(kl.lo, -kl.hi);
  EXPECT_GT(saturation_fraction(v, kl), 0.0);
  EXPECT_LT(saturation_fraction(bulk, kl), 0.001);
  const double e_kl = quantisation_error(bulk, kl, true), e_mm = quantisation_error(bulk, mm, true);
  EXPECT_LT(e_kl, e_mm / 5) << "entropy " << e_kl << " min_max " << e_mm;
}

TEST(CalibrationTest, EntropyKeepsNearlyTheWholeRangeOfAUniformDistribution) {
  const std::vector<float> v = uniform(100000, -2.0f, 2.0f, 13);
  const QuantRange mm = calibrate(v, options(CalibrationMethod::min_max, true));
  const QuantRange kl = calibrate(v, options(CalibrationMethod::entropy, true));
  EXPECT_LE(kl.hi, mm.hi);
  EXPECT_GT(kl.hi, 0.99f * mm.hi);  // clipping a flat distribution piles its tail into one bin
}

// Values that 128 levels hold exactly lose nothing to quantisation, so nothing is clipped:
// each level's count is spread over the bins that have data, not over its whole span.
TEST(CalibrationTest, EntropyKeepsTheWholeRangeOfACoarseGrid) {
  std::vector<float> v;
  for (int copy = 0; copy < 100; ++copy)
    for (int k = -8; k <= 8; ++k) v.push_back(float(k));
  EXPECT_EQ(calibrate(v, options(CalibrationMethod::entropy, true)).hi, 8.0f);
  EXPECT_EQ(calibrate(v, options(CalibrationMethod::entropy)).lo, -8.0f);
}

TEST(CalibrationTest, EntropyOfNonNegativeDataStartsAtZeroUnlessSymmetric) {
  std::vector<float> v = normal(50000, 14);
  for (float& x : v) x = std::abs(x);
  v.push_back(40.0f);
  const QuantRange a = calibrate(v, options(CalibrationMethod::entropy));
  EXPECT_EQ(a.lo, 0.0f);
  EXPECT_LT(a.hi, 6.0f);
  const QuantRange s = calibrate(v, options(CalibrationMethod::entropy, true));
  EXPECT_EQ(s.lo, -s.hi);
  EXPECT_EQ(s.hi, a.hi);
}

TEST(CalibrationTest, PerChannelRangesFollowEachColumn) {
  const std::int64_t rows = 300, cols = 4;
  const std::vector<float> scale = {1.0f, 10.0f, 0.1f, 100.0f};
  std::vector<float> b = uniform(std::size_t(rows * cols), -1.0f, 1.0f, 15);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] *= scale[i % cols];
  for (bool symmetric : {false, true}) {
    const CalibrationOptions o = options(CalibrationMethod::min_max, symmetric);
    const std::vector<QuantRange> r = calibrate_per_channel(b, rows, cols, o);
    ASSERT_EQ(r.size(), cols);
    for (std::int64_t j = 0; j < cols; ++j) {
      std::vector<float> column;
      for (std::int64_t i = 0; i < rows; ++i) column.push_back(b[std::size_t(i * cols + j)]);
      const QuantRange want = calibrate(column, o);
      EXPECT_EQ(r[j].lo, want.lo) << "column " << j;
      EXPECT_EQ(r[j].hi, want.hi) << "column " << j;
      EXPECT_GT(r[j].hi, 0.9f * scale[j]) << "column " << j;
      EXPECT_LE(r[j].hi, scale[j]) << "column " << j;
    }
  }
}

TEST(CalibrationTest, SaturationFractionCountsValuesStrictlyOutside) {
  const std::vector<float> v = {-3.0f, -1.0f, 0.0f, 1.0f, 2.0f, 5.0f, 2.5f, -1.5f};
  EXPECT_DOUBLE_EQ(saturation_fraction(v, {-1.0f, 2.0f}), 4.0 / 8);
  EXPECT_DOUBLE_EQ(saturation_fraction(v, {-3.0f, 5.0f}), 0.0);
}

TEST(CalibrationTest, CodesPutZeroOnTheGrid) {
  const AffineU8 p = affine_params({-1.0f, 3.0f});
  EXPECT_FLOAT_EQ(p.scale, 4.0f / 255);
  EXPECT_EQ(p.zero_point, 64);  // -(-1) / (4 / 255) = 63.75
  EXPECT_NEAR(covered_range(p).lo, -1.0f, p.scale / 2);
  EXPECT_NEAR(covered_range(p).hi, 3.0f, p.scale / 2);
  EXPECT_EQ(affine_params({0.0f, 2.0f}).zero_point, 0);
  EXPECT_EQ(affine_params({-2.0f, 0.0f}).zero_point, 255);
  EXPECT_FLOAT_EQ(symmetric_scale({-2.0f, 1.0f}), 2.0f / 127);
  EXPECT_EQ(symmetric_scale({0.0f, 0.0f}), 1.0f);
  const std::vector<float> zeros(10, 0.0f);
  EXPECT_EQ(quantisation_error(zeros, {-1.0f, 3.0f}, false), 0.0);
}

TEST(CalibrationTest, QuantisationErrorIsSmallOnTheGridAndGrowsWithClipping) {
  const std::vector<float> grid = {-127 / 64.0f, -1.0f, 0.0f, 0.5f, 2.0f - 1 / 64.0f};
  EXPECT_NEAR(quantisation_error(grid, {-127 / 64.0f, 127 / 64.0f}, true), 0.0, 1e-6);
  std::vector<float> v = uniform(10000, -1.0f, 1.0f, 16);
  const double fine = quantisation_error(v, {-1.0f, 1.0f}, false);
  EXPECT_NEAR(fine, 1.0 / 255, 0.05 / 255);  // RMS (2/255) / sqrt(12) over RMS 1 / sqrt(3)
  EXPECT_GT(quantisation_error(v, {-0.5f, 0.5f}, false), 10 * fine);
  for (float& x : v) x *= 1000;
  EXPECT_NEAR(quantisation_error(v, {-1000.0f, 1000.0f}, false), fine, 1e-6);
}

TEST(CalibrationTest, BadInputNamesTheField) {
  const std::vector<float> empty, with_nan = {1.0f, std::nanf(""), 2.0f}, ok = {1.0f, -1.0f};
  expect_bad_input([&] { calibrate(empty, {}); }, "samples");
  expect_bad_input([&] { calibrate(with_nan, options(CalibrationMethod::entropy)); }, "samples");
  CalibrationOptions o = options(CalibrationMethod::entropy);
  o.bins = 127;
  expect_bad_input([&] { calibrate(ok, o); }, "bins");
  o.bins = 65537;
  expect_bad_input([&] { calibrate(ok, o); }, "bins");
  for (double p : {0.0, 101.0, -5.0, std::nan("")}) {
    o = options(CalibrationMethod::percentile);
    o.percentile = p;
    expect_bad_input([&] { calibrate(ok, o); }, "percentile");
  }
  expect_bad_input([] { parse_calibration_method("kl"); }, "method");
  try {
    parse_calibration_method("minmax");
    ADD_FAILURE() << "'minmax' parsed";
  } catch (const Error& e) {
    for (const char* name : {"min_max", "percentile", "entropy"})
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
  const std::vector<float> b(6, 1.0f);
  expect_bad_input([&] { calibrate_per_channel(b, 4, 2, {}); }, "rows");
  expect_bad_input([&] { calibrate_per_channel(b, 0, 6, {}); }, "cols");
  expect_bad_input([&] { affine_params({2.0f, 1.0f}); }, "range");
  expect_bad_input([&] { saturation_fraction(empty, {-1.0f, 1.0f}); }, "samples");
}

TEST(CalibrationTest, MethodNamesRoundTrip) {
  for (auto m : {CalibrationMethod::min_max, CalibrationMethod::percentile, CalibrationMethod::entropy})
    EXPECT_EQ(parse_calibration_method(to_string(m)), m);
}

TEST(CalibrationTest, SameInputGivesTheSameRange) {
  const std::vector<float> v = normal_with_outliers(20000, 17);
  for (auto m : {CalibrationMethod::min_max, CalibrationMethod::percentile, CalibrationMethod::entropy})
    for (bool symmetric : {false, true}) {
      const QuantRange a = calibrate(v, options(m, symmetric)), b = calibrate(v, options(m, symmetric));
      EXPECT_EQ(a.lo, b.lo) << to_string(m);
      EXPECT_EQ(a.hi, b.hi) << to_string(m);
    }
  EXPECT_EQ(normal(5, 18), normal(5, 18));  // the seeded samples every test relies on
}

}  // namespace
}  // namespace atvoss::host
