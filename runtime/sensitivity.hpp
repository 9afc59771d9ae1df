// Sensitivity: how much each matmul layer of a model loses when it runs in int8 or bf16
// instead of fp32, measured on real numbers with the real host kernels (Runtime), and the
// mixed-precision plan that follows from it: every layer as cheap as an error budget allows.
//
// Data (seeded, so the same seed gives the same numbers):
//   weights  B ~ N(0, 1/sqrt(K)) (unit-variance outputs), bias and batchnorm shift ~ N(0, 0.05),
//            batchnorm scale ~ 1 + N(0, 0.05), an "add" residual ~ N(0, 1): fp32 operands that
//            every precision shares.
//   inputs   a layer whose K is the previous layer's N and whose M is the previous M is
//            chained: it reads the previous layer's fp32 output (real activations, ReLU's
//            zeros included). Any other layer reads a heavy-tailed draw: N(0, 1) with one
//            value in 10,000 ten times larger, as transformer activations have outliers.
//   calibration runs on its own batches (calibration_rows rounded up to whole batches of
//            the layer's M, so the kernels of the evaluation shape serve), never on the batch
//            the error is measured on: a chained layer's calibration input is the fp32 chain
//            run on the first layer's calibration batches.
// int8 is low_precision.hpp's form: A u8 per tensor over the calibrated range
// (host::affine_params), B s8 per output column from max|B[:, j]| (symmetric, never clipped),
// qscale[j] = scale_A * scale_B[j], qcomp[j] = zero point * sum_k qB[k, j]. bf16 rounds both.
//
// A layer's error is its own: the relative RMS ||y_q - y_fp32|| / ||y_fp32|| with fp32 inputs.
// chained_error then runs a chained model end to end in a plan's precisions, where errors
// compound, which is the plan's measured output error. Times are median kernel times of
// default (or table) schedules; they are reported, not guaranteed.
// Safe to call from several threads on one Runtime (which is thread-safe), but concurrent
// calls disturb each other's times.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/workload.hpp"
#include "host/calibration.hpp"
#include "runtime/runtime.hpp"

namespace atvoss::runtime {

// One fp32 matmul layer (op "matmul", epilogue ops the host generates: bias, batchnorm, relu,
// gelu, sigmoid, silu, add).
struct SensitivityLayer {
  std::string name;
  Workload workload;
};

struct SensitivityOptions {
  std::uint64_t seed = 1;
  host::CalibrationOptions calibration;  // activations; weights are per-channel min_max, symmetric
  std::int64_t calibration_rows = 256;   // > 0; rounded up to whole batches of the layer's M
  int timed_calls = 5;                   // > 0; the median after one warm-up call
  // Chain layers by shape (above). false: every layer reads its own seeded input, for layers
  // whose shapes match although the model runs other ops between them (attention, layernorm).
  bool chain = true;
};

struct LayerSensitivity {
  std::string name;
  Workload workload;
  bool chained = false;                          // reads the previous layer's output
  host::QuantRange act_range;                    // calibrated range of the layer's input
  double saturation = 0;                         // share of the evaluation input outside act_range
  double int8_error = 0;                         // relative RMS against fp32
  double bf16_error = 0;                         // NaN when the CPU has no avx512_bf16 (not measured)
  double fp32_us = 0, int8_us = 0, bf16_us = 0;  // median kernel times; bf16 NaN when not measured
  double error(DType d) const;                   // 0 for float32
  double time_us(DType d) const;
};

// Whether w is a layer measure_sensitivity takes: an fp32 matmul the host generates (no
// (re)quantize epilogue). why (if given) says what is missing.
bool sensitivity_layer_supported(const Workload& w, std::string* why = nullptr);
// Why this CPU cannot run the int8 kernels ("" when it can): they need avx512_vnni.
std::string int8_unavailable();

// Throws bad_input naming the field: 'layers' empty, 'layers[i].workload' not an fp32 matmul
// the host generates, an option out of range; naming avx512_vnni on a CPU without it.
std::vector<LayerSensitivity> measure_sensitivity(Runtime& rt, const std::vector<SensitivityLayer>& layers,
                                                  const SensitivityOptions& options);

struct PlannedLayer {
  std::string name;
  DType dtype = DType::float32;
  double error = 0;            // the layer's own measured error in dtype
  double time_us = 0;          // its kernel time in dtype
  host::QuantRange act_range;  // used when dtype is int8
};

struct MixedPrecisionPlan {
  double threshold = 0;
  std::vector<PlannedLayer> layers;
  double time_us = 0;       // sum of the chosen kernels' times
  double fp32_time_us = 0;  // sum of the fp32 kernels' times
  double speedup() const { return time_us > 0 ? fp32_time_us / time_us : 1.0; }
};

// Each layer int8 if its error <= threshold, else bf16 if available and its error <= threshold,
// else float32. bad_input naming 'layers' (empty) or 'threshold' (negative or not finite).
MixedPrecisionPlan plan_precision(const std::vector<LayerSensitivity>& layers, double threshold, bool bf16_available);

// The chain (every layer after the first chained, as measure_sensitivity decides) run end to
// end on the evaluation batch in the plan's precisions: the relative RMS of the last output
// against the all-fp32 chain (exactly 0 for an all-fp32 plan; a plan whose only low-precision
// layer is the last gives that layer's own error). layers and options must be those the plan
// was measured with. bad_input naming 'layers' if they are no chain (or options.chain is
// false) or do not match the plan.
double chained_error(Runtime& rt, const std::vector<SensitivityLayer>& layers, const MixedPrecisionPlan& plan,
                     const SensitivityOptions& options);

// plan_precision, then, while the chain's measured end-to-end error (chained_error) is over
// the threshold, the low-precision layer with the largest own error moves one step up (int8 to
// bf16 where bf16 is available and within the threshold, else to fp32; bf16 to fp32): each
// layer within the threshold does not bound the error the chain compounds. The plan returned
// measures within the threshold (all fp32 measures 0); its error goes to *measured if given.
// The same bad input as plan_precision and chained_error.
MixedPrecisionPlan plan_chain(Runtime& rt, const std::vector<SensitivityLayer>& layers,
                              const std::vector<LayerSensitivity>& measured_layers, double threshold,
                              bool bf16_available, const SensitivityOptions& options, double* measured = nullptr);

// The job spec's "precision" object for the plan (frontend/precision.hpp's parse_precision):
// {"fc1": {"weight": 8, "act": 8}, "fc2": {"weight": 16, "act": 16, "type": "bfloat16"},
//  "fc3": {"weight": 32, "act": 32}}.
Json precision_config(const MixedPrecisionPlan& plan);

}  // namespace atvoss::runtime
