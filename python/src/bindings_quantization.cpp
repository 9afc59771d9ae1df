// Quantisation bindings, which python/atvoss/quantization.py wraps: calibration, the int8 codes,
// bf16 rounding and the sensitivity analysis of a Runtime's layers with its mixed-precision
// plans (runtime/sensitivity.hpp). The GIL is released while a sensitivity measurement runs.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "core/error.hpp"
#include "host/calibration.hpp"
#include "host/low_precision.hpp"
#include "host/machine.hpp"
#include "numpy_arrays.hpp"
#include "runtime/runtime.hpp"
#include "runtime/sensitivity.hpp"

namespace atvoss::python {
namespace {

// Calibration options from keyword arguments (host/calibration.hpp).
host::CalibrationOptions calibration_options(const std::string& method, double percentile, int bins, bool symmetric) {
  host::CalibrationOptions o;
  o.method = host::parse_calibration_method(method);
  o.percentile = percentile;
  o.bins = bins;
  o.symmetric = symmetric;
  return o;
}

std::span<const float> span_of(const FloatArray& a) { return {a.data(), std::size_t(a.size())}; }

py::tuple calibrate(const py::object& samples, const std::string& method, double percentile, int bins, bool symmetric) {
  const FloatArray x = float32_array(samples, "samples");
  const host::QuantRange r = host::calibrate(span_of(x), calibration_options(method, percentile, bins, symmetric));
  return py::make_tuple(r.lo, r.hi);
}

// (scale, zero point) of the u8 code of [lo, hi] (host::affine_params).
py::tuple affine_code(float lo, float hi) {
  const host::AffineU8 c = host::affine_params({lo, hi});
  return py::make_tuple(c.scale, c.zero_point);
}

Array<std::uint8_t> quantize_activations(const py::object& x_obj, float scale, int zero_point) {
  const FloatArray x = float32_array(x_obj, "x");
  const host::AffineU8 code{scale, zero_point};
  if (!(scale > 0) || zero_point < 0 || zero_point > 255) {
    throw_bad_input("quantize: the code must have 'scale' > 0 and 'zero_point' in [0, 255]");
  }
  Array<std::uint8_t> q(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  std::transform(x.data(), x.data() + x.size(), q.mutable_data(), [&](float v) { return code.quantize(v); });
  return q;
}

// (codes int8 shaped like b, scale float32 (N,), column sums int32 (N,)) of weights b whose
// last axis is the output channels: (K, N) or a conv filter (R, S, C, K).
py::tuple quantize_weights(const py::object& b_obj) {
  const FloatArray b = float32_array(b_obj, "b");
  if (b.ndim() < 2) throw_bad_input("quantize: 'b' must have 2 or more dims, the last the output channels");
  const std::int64_t cols = b.shape(b.ndim() - 1), rows = b.size() / std::max<std::int64_t>(1, cols);
  const host::Int8Weights w = host::quantize_weights_int8(span_of(b), 1, rows, cols);
  Array<std::int8_t> q(std::vector<py::ssize_t>(b.shape(), b.shape() + b.ndim()));
  std::copy(w.q.begin(), w.q.end(), q.mutable_data());
  return py::make_tuple(q, Array<float>(py::ssize_t(w.scale.size()), w.scale.data()),
                        Array<std::int32_t>(py::ssize_t(w.column_sum.size()), w.column_sum.data()));
}

Array<std::uint16_t> to_bf16(const py::object& x_obj) {
  const FloatArray x = float32_array(x_obj, "x");
  Array<std::uint16_t> out(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  std::transform(x.data(), x.data() + x.size(), out.mutable_data(), host::to_bf16);
  return out;
}

Json layer_json(const runtime::LayerSensitivity& l) {
  return Json{{"name", l.name},
              {"workload", l.workload.to_json()},
              {"chained", l.chained},
              {"act_range", {l.act_range.lo, l.act_range.hi}},
              {"saturation", l.saturation},
              {"int8_error", l.int8_error},
              {"bf16_error", std::isnan(l.bf16_error) ? Json(nullptr) : Json(l.bf16_error)},
              {"fp32_us", l.fp32_us},
              {"int8_us", l.int8_us},
              {"bf16_us", std::isnan(l.bf16_us) ? Json(nullptr) : Json(l.bf16_us)}};
}

// A model's matmul layers measured once (runtime/sensitivity.hpp), then planned for any
// number of thresholds.
class PySensitivity {
 public:
  PySensitivity(const py::object& rt, const std::vector<std::pair<std::string, std::string>>& layers,
                std::uint64_t seed, const std::string& method, double percentile, int bins,
                std::int64_t calibration_rows, int timed_calls, bool chain)
      : rt_(runtime_of(rt)) {
    for (const auto& [name, workload] : layers) {
      layers_.push_back({name, Workload::from_json(parse(workload, "workload"))});
    }
    options_.seed = seed;
    options_.calibration = calibration_options(method, percentile, bins, false);
    options_.calibration_rows = calibration_rows;
    options_.timed_calls = timed_calls;
    options_.chain = chain;
    py::gil_scoped_release release;
    measured_ = runtime::measure_sensitivity(rt_, layers_, options_);
  }

  std::string layers() const {
    Json out = Json::array();
    for (const auto& l : measured_) out.push_back(layer_json(l));
    return dump(out);
  }

  // The plan for threshold: chained (measured end to end, layers promoted until within it)
  // when the layers form a chain, else each layer on its own error.
  std::string plan(double threshold) {
    const bool bf16 = host::this_machine().has_flag("avx512_bf16");
    const bool chained = options_.chain && measured_.size() > 1 &&
                         std::all_of(measured_.begin() + 1, measured_.end(), [](const auto& l) { return l.chained; });
    double measured = NAN;
    runtime::MixedPrecisionPlan p;
    {
      py::gil_scoped_release release;
      p = chained ? runtime::plan_chain(rt_, layers_, measured_, threshold, bf16, options_, &measured)
                  : runtime::plan_precision(measured_, threshold, bf16);
    }
    Json layers = Json::array();
    for (const auto& l : p.layers) {
      layers.push_back(Json{{"name", l.name},
                            {"dtype", to_string(l.dtype)},
                            {"error", l.error},
                            {"time_us", l.time_us},
                            {"act_range", {l.act_range.lo, l.act_range.hi}}});
    }
    return dump(Json{{"threshold", p.threshold},
                     {"layers", layers},
                     {"time_us", p.time_us},
                     {"fp32_time_us", p.fp32_time_us},
                     {"speedup", p.speedup()},
                     {"chained", chained},
                     {"measured_error", std::isnan(measured) ? Json(nullptr) : Json(measured)},
                     {"precision", runtime::precision_config(p)}});
  }

 private:
  runtime::Runtime& rt_;
  std::vector<runtime::SensitivityLayer> layers_;
  runtime::SensitivityOptions options_;
  std::vector<runtime::LayerSensitivity> measured_;
};

}  // namespace

void bind_quantization(py::module_& m) {
  m.def("calibrate", &calibrate, py::arg("samples"), py::arg("method"), py::arg("percentile"), py::arg("bins"),
        py::arg("symmetric"));
  m.def("affine_code", &affine_code, py::arg("lo"), py::arg("hi"));
  m.def("quantize_activations", &quantize_activations, py::arg("x"), py::arg("scale"), py::arg("zero_point"));
  m.def("quantize_weights", &quantize_weights, py::arg("b"));
  m.def("to_bf16", &to_bf16, py::arg("x"));
  py::class_<PySensitivity>(m, "Sensitivity")
      .def(py::init<py::object, std::vector<std::pair<std::string, std::string>>, std::uint64_t, std::string, double,
                    int, std::int64_t, int, bool>(),
           py::arg("runtime"), py::arg("layers"), py::arg("seed"), py::arg("method"), py::arg("percentile"),
           py::arg("bins"), py::arg("calibration_rows"), py::arg("timed_calls"), py::arg("chain"),
           py::keep_alive<1, 2>())
      .def("layers", &PySensitivity::layers)
      .def("plan", &PySensitivity::plan, py::arg("threshold"));
}

}  // namespace atvoss::python
