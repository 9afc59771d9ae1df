// Calibration: choosing the clipping range an fp32 tensor is quantised to int8 over, from
// sample values, the way TensorRT, oneDNN and PyTorch observers do. Values outside the range
// saturate, so a narrower range trades clipped outliers for finer steps on the bulk:
//   min_max:    the whole sample range; nothing clips, but one outlier coarsens every step.
//   percentile: symmetric, [-t, t] with t the given percentile of |x|; otherwise the range
//               between the (100 - p) / 2 and 100 - (100 - p) / 2 percentiles of x, so that
//               each tail loses the same share (percentiles interpolate linearly between
//               sorted samples, as numpy's default).
//   entropy:    TensorRT's KL-divergence method: a histogram of |x| in `bins` bins; for each
//               threshold from 128 bins upward the clipped distribution P (outliers folded
//               into its last bin) is merged into 128 levels and spread back as Q; the
//               threshold t with the least KL(P || Q) wins (ties to the larger, which clips
//               less). Symmetric: [-t, t]; otherwise the sample range cut at -t and t.
// Every range holds 0, because an affine code must represent 0 exactly (padding, ReLU).
// All-zero samples calibrate to [0, 0]; its scales are then 1, as in low_precision.hpp.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "host/low_precision.hpp"

namespace atvoss::host {

enum class CalibrationMethod { min_max, percentile, entropy };

std::string_view to_string(CalibrationMethod m);
CalibrationMethod parse_calibration_method(std::string_view s);  // bad_input naming 'method' on unknown

struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::min_max;
  double percentile = 99.99;  // in (0, 100]; percentile only
  int bins = 2048;            // in [128 (the first threshold tried), 65536]; entropy only
  bool symmetric = false;     // s8 [-t, t] rather than a u8 range fitted to the data
};

// The clipping range: lo <= 0 <= hi.
struct QuantRange {
  float lo = 0;
  float hi = 0;
};

// Throws bad_input naming the field: an invalid option, or 'samples' empty or not all finite.
QuantRange calibrate(std::span<const float> samples, const CalibrationOptions& options);

// One range per column of the row-major rows x cols matrix `data`: a matmul's weights B[K, N]
// have their output channels as columns. Throws bad_input on dims that do not match data.
std::vector<QuantRange> calibrate_per_channel(std::span<const float> data, std::int64_t rows, std::int64_t cols,
                                              const CalibrationOptions& options);

// u8 asymmetric code of a range, as the int8 kernels read A (low_precision.hpp's affine_u8):
// the zero point is rounded, so the range the code covers (covered_range) is r nudged by
// under half a step, 0 being exact. bad_input naming 'range' on a non-finite or reversed r.
AffineU8 affine_params(QuantRange r);
QuantRange covered_range(const AffineU8& code);

// s8 symmetric code of a range: x ~ scale * q, q in [-127, 127], scale max(|lo|, |hi|) / 127.
float symmetric_scale(QuantRange r);

// The share of samples outside r (strictly: a value on a bound is represented, not clipped).
double saturation_fraction(std::span<const float> samples, QuantRange r);

// RMS of (x - dequantise(quantise(x))) over RMS of x, with the s8 code of r when symmetric and
// the u8 code otherwise: what a report shows to compare ranges. 0 when x is all zero.
double quantisation_error(std::span<const float> x, QuantRange r, bool symmetric);

}  // namespace atvoss::host
