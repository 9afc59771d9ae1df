// Runtime bindings: runtime::Runtime over numpy arrays (python/atvoss/runtime.py wraps them),
// fp32 and the int8 / bf16 kernels (the quantisation pieces are bindings_quantization.cpp's).
// Every buffer is checked here against the workload's operand sizes before a pointer reaches a
// kernel, so a wrong shape or dtype is a ValueError or TypeError, never a read past an array.
// The GIL is released while a kernel (and a first-use compile) runs.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <optional>
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

std::string dims_text(const std::vector<py::ssize_t>& dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

std::string shape_text(const py::array& a) { return dims_text({a.shape(), a.shape() + a.ndim()}); }

// The epilogue operands as arrays checked against the workload; a given operand that no op
// reads is refused too (it would be silently ignored otherwise).
struct Epilogue {
  std::vector<std::string> ops;
  std::optional<FloatArray> bias, scale, shift, residual, slope;
  std::vector<float> qout;  // {scale, zero point} of a quantize / requantize; empty when not given
  bool codes = false;       // the call returns the u8 codes of its output (host/kernel_abi.hpp)

  Epilogue(std::vector<std::string> names, const py::object& b, const py::object& sc, const py::object& sh,
           const py::object& res, const std::optional<std::pair<float, float>>& grid, bool u8_codes,
           const py::object& sl)
      : ops(std::move(names)), codes(u8_codes) {
    auto take = [&](const py::object& o, const char* name, const char* op, std::optional<FloatArray>& out) {
      const bool used = std::find(ops.begin(), ops.end(), op) != ops.end();
      if (o.is_none()) return;
      if (!used) throw_bad_input(std::string("runtime: '") + name + "' given but the epilogue has no '" + op + "'");
      out = float32_array(o, name);
    };
    take(b, "bias", "bias", bias);
    take(sc, "scale", "batchnorm", scale);
    take(sh, "shift", "batchnorm", shift);
    take(res, "residual", "add", residual);
    take(sl, "slope", "leaky_relu", slope);
    const int quantizes = quantize_grids(ops);
    if (grid && !quantizes) throw_bad_input("runtime: 'qout' given but the epilogue has no 'quantize' or 'requantize'");
    // One grid here; the C++ and C APIs take one per quantize op (host/kernel_abi.hpp).
    if (quantizes > 1)
      throw_bad_input("runtime: an epilogue of more than one 'quantize' or 'requantize' is run from C++ or C");
    if (grid) qout = {grid->first, grid->second};
  }

  // REQUIRES: w built from ops. Checks every operand's size; the ABI's epilogue pointers.
  runtime::EpilogueArgs args(const runtime::OperandSizes& n, const std::vector<py::ssize_t>& out_shape) const {
    auto channel = [&](const std::optional<FloatArray>& a, const char* name) -> const float* {
      if (!a) return nullptr;
      if (a->ndim() != 1 || a->shape(0) != n.channel) {
        throw_bad_input(std::string("runtime: '") + name + "' must have shape (" + std::to_string(n.channel) +
                        ",), got " + shape_text(*a));
      }
      return a->data();
    };
    runtime::EpilogueArgs e{ops, channel(bias, "bias"), channel(scale, "scale"), channel(shift, "shift"), nullptr};
    e.qout = qout.empty() ? nullptr : qout.data();
    e.slope = channel(slope, "slope");
    if (residual) {
      const std::vector<py::ssize_t> shape(residual->shape(), residual->shape() + residual->ndim());
      if (shape != out_shape) {
        throw_bad_input("runtime: 'residual' must have the output's shape, got " + shape_text(*residual));
      }
      e.residual = residual->data();
    }
    return e;
  }
};

// A conv2d's filter prepared once for the kernel the runtime runs for it (runtime.hpp's
// PreparedWeights), with the filter shape (R, S, C, K) and dtype it was prepared as.
struct PreparedConv2d {
  runtime::PreparedWeights weights;
  std::vector<py::ssize_t> filter_shape;
  DType dtype = DType::float32;
};

class PyRuntime {
 public:
  PyRuntime(const std::optional<std::string>& table, const std::string& cache_dir, const std::string& foreign_table)
      : rt_(options(table, cache_dir, foreign_table)) {}

  std::string choose(const std::string& workload_json) {
    const Workload w = Workload::from_json(parse(workload_json, "workload"));
    return dump(rt_.choose(w).to_json());
  }

  std::string no_table_reason() const { return rt_.no_table_reason(); }

  // (c, choice JSON or None). a (M, K) @ b (K, N), or batched (B, M, K) @ (B, K, N).
  py::tuple matmul(const py::object& a_obj, const py::object& b_obj, const Epilogue& e, bool with_choice) {
    const FloatArray a = float32_array(a_obj, "a"), b = float32_array(b_obj, "b");
    const Workload w = matmul_of(a, b, e, DType::float32);
    return run(w, fp32_args(a, b), out_shape_of(w, a), e, with_choice);
  }

  // int8: a uint8 (M, K) with A's zero point folded into comp, b int8 (K, N), scale float32
  // (N,) and comp int32 (N,) (runtime.hpp's matmul_int8). bfloat16: a and b uint16 bit
  // patterns, no scale or comp.
  py::tuple matmul_low(const std::string& dtype, const py::object& a_obj, const py::object& b_obj,
                       const py::object& scale, const py::object& comp, const Epilogue& e, bool with_choice) {
    const DType d = low_precision_dtype(dtype);
    if (d == DType::int8) {
      const auto a = typed_array<std::uint8_t>(a_obj, "a", "uint8");
      const auto b = typed_array<std::int8_t>(b_obj, "b", "int8");
      const Workload w = matmul_of(a, b, e, d);
      const auto sc = per_channel<float>(scale, "scale", "float32", w);
      const auto co = per_channel<std::int32_t>(comp, "comp", "int32", w);
      return run(w, int8_args(a, b, sc, co, 0), out_shape_of(w, a), e, with_choice);
    }
    const auto a = typed_array<std::uint16_t>(a_obj, "a", "uint16"),
               b = typed_array<std::uint16_t>(b_obj, "b", "uint16");
    no_scales(scale, comp);
    const Workload w = matmul_of(a, b, e, d);
    return run(w, bf16_args(a, b), out_shape_of(w, a), e, with_choice);
  }

  // (output, choice JSON or None). input (N, H, W, C), filter (R, S, C, K): the host's NHWC and
  // HWIO layouts (docs/host-backend.md), so no copy is made.
  py::tuple conv2d(const py::object& in_obj, const py::object& f_obj, std::int64_t stride, std::int64_t pad,
                   const Epilogue& e, bool with_choice) {
    const FloatArray in = float32_array(in_obj, "input"), f = float32_array(f_obj, "filter");
    const Workload w = conv2d_of(in, f, stride, pad, e, DType::float32);
    return run(w, fp32_args(in, f), conv_out_shape(w), e, with_choice);
  }

  // int8: input uint8 with zero point zero_point, filter int8, scale float32 (K,), comp int32
  // (K,) (runtime.hpp's conv2d_int8). bfloat16: uint16 bit patterns.
  py::tuple conv2d_low(const std::string& dtype, const py::object& in_obj, std::int32_t zero_point,
                       const py::object& f_obj, const py::object& scale, const py::object& comp, std::int64_t stride,
                       std::int64_t pad, const Epilogue& e, bool with_choice) {
    const DType d = low_precision_dtype(dtype);
    if (d == DType::int8) {
      const auto in = typed_array<std::uint8_t>(in_obj, "input", "uint8");
      const auto f = typed_array<std::int8_t>(f_obj, "filter", "int8");
      const Workload w = conv2d_of(in, f, stride, pad, e, d);
      const auto sc = per_channel<float>(scale, "scale", "float32", w);
      const auto co = per_channel<std::int32_t>(comp, "comp", "int32", w);
      return run(w, int8_args(in, f, sc, co, zero_point), conv_out_shape(w), e, with_choice);
    }
    const auto in = typed_array<std::uint16_t>(in_obj, "input", "uint16");
    const auto f = typed_array<std::uint16_t>(f_obj, "filter", "uint16");
    no_scales(scale, comp);
    const Workload w = conv2d_of(in, f, stride, pad, e, d);
    return run(w, bf16_args(in, f), conv_out_shape(w), e, with_choice);
  }

  // The filter prepared once for a conv of inputs shaped input_shape (N, H, W, C): float32,
  // int8 or bfloat16 (uint16 bit patterns), as conv2d / conv2d_low take it.
  PreparedConv2d prepare_conv2d(const std::string& dtype, const py::object& f_obj,
                                const std::vector<py::ssize_t>& input_shape, std::int64_t stride, std::int64_t pad,
                                const Epilogue& e) {
    const DType d = conv_dtype(dtype);
    const py::array f = conv_operand(d, f_obj, "filter");
    const std::vector<py::ssize_t> fs(f.shape(), f.shape() + f.ndim());
    const Workload w = conv2d_of(input_shape, fs, stride, pad, e, d);
    PreparedConv2d out{{}, fs, d};
    {
      py::gil_scoped_release release;
      out.weights = rt_.prepare_weights(w, f.data());
    }
    return out;
  }

  // conv2d / conv2d_low in dtype with a prepared filter: its kernel packs nothing. A filter
  // prepared for another conv (dtype included) is refused by the runtime, naming 'filter'.
  py::tuple conv2d_prepared(const std::string& dtype, const py::object& in_obj, std::int32_t zero_point,
                            const PreparedConv2d& f, const py::object& scale, const py::object& comp,
                            std::int64_t stride, std::int64_t pad, const Epilogue& e, bool with_choice) {
    const DType d = conv_dtype(dtype);
    const py::array in = conv_operand(d, in_obj, "input");
    const Workload w = conv2d_of({in.shape(), in.shape() + in.ndim()}, f.filter_shape, stride, pad, e, d);
    host::AtvossArgs args{};
    if (d == DType::float32)
      args.a = static_cast<const float*>(in.data());
    else
      args.qa = in.data();
    Array<float> sc;
    Array<std::int32_t> co;
    if (d == DType::int8) {
      sc = per_channel<float>(scale, "scale", "float32", w);
      co = per_channel<std::int32_t>(comp, "comp", "int32", w);
      args.qscale = sc.data();
      args.qcomp = co.data();
      args.qzero = zero_point;
    } else {
      no_scales(scale, comp);
    }
    runtime::Runtime::use_prepared(w, f.weights, args);
    return run(w, args, conv_out_shape(w), e, with_choice);
  }

  runtime::Runtime& runtime() { return rt_; }

 private:
  static DType low_precision_dtype(const std::string& dtype) {
    if (dtype == "int8") return DType::int8;
    if (dtype == "bfloat16") return DType::bfloat16;
    throw_bad_input("runtime: 'dtype' must be \"int8\" or \"bfloat16\", got \"" + dtype + "\"");
  }

  static DType conv_dtype(const std::string& dtype) {
    return dtype == "float32" ? DType::float32 : low_precision_dtype(dtype);
  }

  // A conv operand of dtype d: float32; int8's input uint8 and filter int8; bfloat16's uint16.
  static py::array conv_operand(DType d, const py::object& obj, const char* name) {
    if (d == DType::float32) return float32_array(obj, name);
    if (d == DType::bfloat16) return typed_array<std::uint16_t>(obj, name, "uint16");
    if (std::string(name) == "filter") return typed_array<std::int8_t>(obj, name, "int8");
    return typed_array<std::uint8_t>(obj, name, "uint8");
  }

  static void no_scales(const py::object& scale, const py::object& comp) {
    if (!scale.is_none() || !comp.is_none()) throw_bad_input("runtime: bfloat16 takes no 'scale' or 'comp'");
  }

  static host::AtvossArgs fp32_args(const FloatArray& a, const FloatArray& b) {
    host::AtvossArgs args{};
    args.a = a.data();
    args.b = b.data();
    return args;
  }

  static host::AtvossArgs bf16_args(const Array<std::uint16_t>& a, const Array<std::uint16_t>& b) {
    host::AtvossArgs args{};
    args.qa = a.data();
    args.qb = b.data();
    return args;
  }

  // A per-output-channel int8 operand (scale, comp) of w: shape (channels,).
  template <typename T>
  static Array<T> per_channel(const py::object& obj, const char* name, const char* dtype, const Workload& w) {
    Array<T> v = typed_array<T>(obj, name, dtype);
    const std::int64_t n = runtime::operand_sizes(w).channel;
    if (v.ndim() != 1 || v.shape(0) != n) {
      throw_bad_input(std::string("runtime: '") + name + "' must have shape (" + std::to_string(n) + ",), got " +
                      shape_text(v));
    }
    return v;
  }

  static host::AtvossArgs int8_args(const Array<std::uint8_t>& a, const Array<std::int8_t>& b,
                                    const Array<float>& scale, const Array<std::int32_t>& comp,
                                    std::int32_t zero_point) {
    host::AtvossArgs args{};
    args.qa = a.data();
    args.qb = b.data();
    args.qscale = scale.data();
    args.qcomp = comp.data();
    args.qzero = zero_point;
    return args;
  }

  // The matmul or batch_matmul workload of a @ b in dtype d; ValueError on shapes that do not multiply.
  static Workload matmul_of(const py::array& a, const py::array& b, const Epilogue& e, DType d) {
    if (a.ndim() != b.ndim() || (a.ndim() != 2 && a.ndim() != 3)) {
      throw_bad_input("runtime: 'a' and 'b' must both be 2-D (matmul) or 3-D (batch_matmul), got " + shape_text(a) +
                      " and " + shape_text(b));
    }
    const bool batched = a.ndim() == 3;
    const py::ssize_t off = batched ? 1 : 0, batch = batched ? a.shape(0) : 1;
    const py::ssize_t m = a.shape(off), k = a.shape(off + 1), n = b.shape(off + 1);
    if (b.shape(off) != k || (batched && b.shape(0) != batch)) {
      throw_bad_input("runtime: shapes " + shape_text(a) + " and " + shape_text(b) + " do not multiply");
    }
    if (batched && d != DType::float32) {
      throw_bad_input("runtime: int8 and bfloat16 run 2-D matmuls, got " + shape_text(a) + " and " + shape_text(b));
    }
    return batched ? runtime::batch_matmul_workload(batch, m, n, k, e.ops)
                   : runtime::matmul_workload(m, n, k, e.ops, d);
  }

  static std::vector<py::ssize_t> out_shape_of(const Workload& w, const py::array& a) {
    if (a.ndim() == 3) return {w.dim("B"), w.dim("M"), w.dim("N")};
    return {w.dim("M"), w.dim("N")};
  }

  static Workload conv2d_of(const py::array& in, const py::array& f, std::int64_t stride, std::int64_t pad,
                            const Epilogue& e, DType d) {
    return conv2d_of({in.shape(), in.shape() + in.ndim()}, {f.shape(), f.shape() + f.ndim()}, stride, pad, e, d);
  }

  static Workload conv2d_of(const std::vector<py::ssize_t>& in, const std::vector<py::ssize_t>& f, std::int64_t stride,
                            std::int64_t pad, const Epilogue& e, DType d) {
    if (in.size() != 4 || f.size() != 4 || f[2] != in[3]) {
      throw_bad_input("runtime: conv2d takes input (N, H, W, C) and filter (R, S, C, K), got " + dims_text(in) +
                      " and " + dims_text(f));
    }
    const runtime::Conv2dShape s{in[0], in[3], in[1], in[2], f[3], f[0], f[1], stride, pad};
    return runtime::conv2d_workload(s, e.ops, d);
  }

  static std::vector<py::ssize_t> conv_out_shape(const Workload& w) {
    return {w.dim("N"), w.out_h(), w.out_w(), w.dim("K")};
  }

  static runtime::RuntimeOptions options(const std::optional<std::string>& table, const std::string& cache_dir,
                                         const std::string& foreign_table) {
    runtime::RuntimeOptions o;
    o.table = table.value_or("");
    o.build.cache_dir = cache_dir;
    if (foreign_table == "defaults")
      o.foreign_table = runtime::ForeignTable::use_defaults;
    else if (foreign_table != "refuse")
      throw_bad_input("runtime: 'foreign_table' must be \"refuse\" or \"defaults\"");
    return o;
  }

  // (output, the choice's JSON or None): the JSON only when asked, it costs a dump per call.
  // args holds the inputs; the output and the epilogue's operands are added here.
  py::tuple run(const Workload& w, host::AtvossArgs args, const std::vector<py::ssize_t>& out_shape, const Epilogue& e,
                bool with_choice) {
    const runtime::OperandSizes n = runtime::operand_sizes(w);
    const runtime::EpilogueArgs ep = e.args(n, out_shape);
    std::optional<FloatArray> c;
    std::optional<Array<std::uint8_t>> codes;
    if (e.codes) {  // the runtime keeps the partial sums (Runtime::run)
      codes.emplace(out_shape);
      args.qc = codes->mutable_data();
    } else {
      c.emplace(out_shape);
      args.c = c->mutable_data();
    }
    args.bias = ep.bias;
    args.scale = ep.scale;
    args.shift = ep.shift;
    args.residual = ep.residual;
    args.qout = ep.qout;
    args.slope = ep.slope;
    const runtime::Choice* choice = nullptr;
    {
      py::gil_scoped_release release;
      choice = &rt_.run(w, args);
    }
    const py::object out = codes ? py::object(*codes) : py::object(*c);
    return py::make_tuple(out, with_choice ? py::object(py::str(dump(choice->to_json()))) : py::none());
  }

  runtime::Runtime rt_;
};

}  // namespace

runtime::Runtime& runtime_of(const py::object& rt) {
  if (!py::isinstance<PyRuntime>(rt)) {
    throw py::type_error("runtime: expected an atvoss Runtime, got " +
                         std::string(py::str(py::type::of(rt).attr("__name__"))));
  }
  return rt.cast<PyRuntime&>().runtime();
}

void bind_runtime(py::module_& m) {
  py::class_<Epilogue>(m, "RuntimeEpilogue")
      .def(py::init<std::vector<std::string>, py::object, py::object, py::object, py::object,
                    std::optional<std::pair<float, float>>, bool, py::object>(),
           py::arg("ops"), py::arg("bias"), py::arg("scale"), py::arg("shift"), py::arg("residual"),
           py::arg("qout") = py::none(), py::arg("codes") = false, py::arg("slope") = py::none());
  py::class_<PyRuntime>(m, "Runtime")
      .def(py::init<std::optional<std::string>, std::string, std::string>(), py::arg("table"), py::arg("cache_dir"),
           py::arg("foreign_table"))
      .def("choose", &PyRuntime::choose)
      .def("no_table_reason", &PyRuntime::no_table_reason)
      .def("matmul", &PyRuntime::matmul)
      .def("matmul_low", &PyRuntime::matmul_low)
      .def("conv2d", &PyRuntime::conv2d)
      .def("conv2d_low", &PyRuntime::conv2d_low)
      .def("prepare_conv2d", &PyRuntime::prepare_conv2d)
      .def("conv2d_prepared", &PyRuntime::conv2d_prepared);
  py::class_<PreparedConv2d>(m, "PreparedConv2d")
      .def_property_readonly("nbytes", [](const PreparedConv2d& p) { return p.weights.bytes(); })
      .def_property_readonly("packed", [](const PreparedConv2d& p) { return p.weights.packed(); })
      .def_property_readonly("dtype", [](const PreparedConv2d& p) { return std::string(to_string(p.dtype)); })
      .def_property_readonly("filter_shape",
                             [](const PreparedConv2d& p) { return py::tuple(py::cast(p.filter_shape)); });
}

}  // namespace atvoss::python
