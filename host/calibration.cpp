#include "host/calibration.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.hpp"

namespace atvoss::host {

std::string_view to_string(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::min_max:
      return "min_max";
    case CalibrationMethod::percentile:
      return "percentile";
    case CalibrationMethod::entropy:
      return "entropy";
  }
  return "unknown";
}

CalibrationMethod parse_calibration_method(std::string_view s) {
  for (auto m : {CalibrationMethod::min_max, CalibrationMethod::percentile, CalibrationMethod::entropy})
    if (to_string(m) == s) return m;
  throw_bad_input("calibration: field 'method' must be one of min_max, percentile, entropy; got '" + std::string(s) +
                  "'");
}

namespace {

constexpr int kLevels = 128;  // the s8 magnitudes TensorRT merges a candidate distribution into

void validate(const CalibrationOptions& o) {
  if (!(o.percentile > 0 && o.percentile <= 100))
    throw_bad_input("calibration: field 'percentile' must be in (0, 100], got " + std::to_string(o.percentile));
  // The entropy search costs bins^2: the cap keeps a typo from running for hours.
  if (o.bins < kLevels || o.bins > 65536)
    throw_bad_input("calibration: field 'bins' must be in [128, 65536], got " + std::to_string(o.bins));
}

void require_samples(std::span<const float> v, const std::string& field) {
  if (v.empty()) throw_bad_input("calibration: field '" + field + "' must not be empty");
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw_bad_input("calibration: field '" + field + "' must be finite, got " + std::to_string(v[i]) + " at index " +
                      std::to_string(i));
}

QuantRange holding_zero(double lo, double hi) { return {float(std::min(lo, 0.0)), float(std::max(hi, 0.0))}; }

void require_range(QuantRange r) {
  if (!std::isfinite(r.lo) || !std::isfinite(r.hi) || r.lo > r.hi)
    throw_bad_input("calibration: field 'range' must be finite with lo <= hi, got [" + std::to_string(r.lo) + ", " +
                    std::to_string(r.hi) + "]");
}

// The codes extend a range that misses 0 to hold it, as affine_u8 does.
QuantRange checked(QuantRange r) {
  require_range(r);
  return holding_zero(r.lo, r.hi);
}

double max_abs(std::span<const float> v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::abs(x)));
  return m;
}

// q in [0, 1], interpolating between neighbours in sorted order.
double quantile(std::vector<float> v, double q) {
  const double pos = q * double(v.size() - 1);
  const auto k = std::size_t(pos);
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(k), v.end());
  const double a = v[k];
  if (k + 1 >= v.size()) return a;
  const double b = *std::min_element(v.begin() + std::ptrdiff_t(k) + 1, v.end());
  return a + (pos - double(k)) * (b - a);
}

QuantRange min_max(std::span<const float> v, bool symmetric) {
  if (symmetric) return holding_zero(-max_abs(v), max_abs(v));
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return holding_zero(*lo, *hi);
}

QuantRange percentile(std::span<const float> v, double p, bool symmetric) {
  if (symmetric) {
    std::vector<float> mag(v.size());
    std::transform(v.begin(), v.end(), mag.begin(), [](float x) { return std::abs(x); });
    const double t = quantile(std::move(mag), p / 100);
    return holding_zero(-t, t);
  }
  const double tail = (100 - p) / 200;
  const std::vector<float> copy(v.begin(), v.end());
  return holding_zero(quantile(copy, tail), quantile(copy, 1 - tail));
}

std::vector<double> abs_histogram(std::span<const float> v, double top, int bins) {
  std::vector<double> h(std::size_t(bins), 0.0);
  for (float x : v) {
    const auto i = std::int64_t(double(std::abs(x)) / top * bins);
    h[std::size_t(std::min<std::int64_t>(i, bins - 1))] += 1;
  }
  return h;
}

// KL(P || Q) for clipping the histogram after its first n bins (infinite where Q misses mass
// that P has, which rules the threshold out).
double clipped_divergence(const std::vector<double>& h, std::int64_t n, double total) {
  std::array<double, kLevels> merged{}, filled{};
  double kept = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const std::int64_t l = j * kLevels / n;
    merged[l] += h[j];
    filled[l] += h[j] > 0 ? 1 : 0;
    kept += h[j];
  }
  if (kept == 0) return std::numeric_limits<double>::infinity();
  const double outliers = total - kept;
  double kl = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const double p = (h[j] + (j == n - 1 ? outliers : 0)) / total;
    if (p == 0) continue;
    const std::int64_t l = j * kLevels / n;
    const double q = h[j] > 0 ? merged[l] / filled[l] / kept : 0;
    if (q == 0) return std::numeric_limits<double>::infinity();
    kl += p * std::log(p / q);
  }
  return kl;
}

double entropy_threshold(std::span<const float> v, double top, int bins) {
  const std::vector<double> h = abs_histogram(v, top, bins);
  std::int64_t best = bins;
  double best_kl = std::numeric_limits<double>::infinity();
  for (std::int64_t n = kLevels; n <= bins; ++n) {
    const double kl = clipped_divergence(h, n, double(v.size()));
    if (std::isfinite(kl) && kl <= best_kl) {
      best_kl = kl;
      best = n;
    }
  }
  return top * double(best) / bins;  // exactly top when nothing clips
}

QuantRange entropy(std::span<const float> v, int bins, bool symmetric) {
  const double top = max_abs(v);
  if (top == 0) return {0, 0};
  const double t = entropy_threshold(v, top, bins);
  if (symmetric) return holding_zero(-t, t);
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return holding_zero(std::max(double(*lo), -t), std::min(double(*hi), t));
}

}  // namespace

QuantRange calibrate(std::span<const float> samples, const CalibrationOptions& options) {
  validate(options);
  require_samples(samples, "samples");
  switch (options.method) {
    case CalibrationMethod::min_max:
      return min_max(samples, options.symmetric);
    case CalibrationMethod::percentile:
      return percentile(samples, options.percentile, options.symmetric);
    case CalibrationMethod::entropy:
      return entropy(samples, options.bins, options.symmetric);
  }
  throw Error(ErrorKind::internal, "calibration: unknown method");
}

std::vector<QuantRange> calibrate_per_channel(std::span<const float> data, std::int64_t rows, std::int64_t cols,
                                              const CalibrationOptions& options) {
  if (rows <= 0 || cols <= 0 || std::uint64_t(rows) * std::uint64_t(cols) != data.size())
    throw_bad_input("calibration: fields 'rows' x 'cols' (" + std::to_string(rows) + " x " + std::to_string(cols) +
                    ") must be positive and match 'data' (" + std::to_string(data.size()) + " values)");
  require_samples(data, "data");
  std::vector<QuantRange> out;
  std::vector<float> column(std::size_t(rows), 0.0f);
  for (std::int64_t j = 0; j < cols; ++j) {
    for (std::int64_t i = 0; i < rows; ++i) column[std::size_t(i)] = data[std::size_t(i * cols + j)];
    out.push_back(calibrate(column, options));
  }
  return out;
}

AffineU8 affine_params(QuantRange r) {
  r = checked(r);
  return affine_u8(r.lo, r.hi);
}

QuantRange covered_range(const AffineU8& code) { return {code.value(0), code.value(255)}; }

float symmetric_scale(QuantRange r) {
  r = checked(r);
  const float m = std::max(-r.lo, r.hi);
  return m > 0 ? m / 127.0f : 1.0f;
}

double saturation_fraction(std::span<const float> samples, QuantRange r) {
  require_samples(samples, "samples");
  require_range(r);
  const auto clipped = std::count_if(samples.begin(), samples.end(), [&](float x) { return x < r.lo || x > r.hi; });
  return double(clipped) / double(samples.size());
}

double quantisation_error(std::span<const float> x, QuantRange r, bool symmetric) {
  require_samples(x, "x");
  const AffineU8 code = symmetric ? AffineU8{symmetric_scale(r), 0} : affine_params(r);
  const long qlo = symmetric ? -127 : 0, qhi = symmetric ? 127 : 255;
  double err = 0, sig = 0;
  for (float v : x) {
    const long q = std::clamp(std::lround(v / code.scale) + code.zero_point, qlo, qhi);
    const double d = double(v) - double(code.scale * float(q - code.zero_point));
    err += d * d;
    sig += double(v) * double(v);
  }
  return sig > 0 ? std::sqrt(err / sig) : 0.0;
}

}  // namespace atvoss::host
