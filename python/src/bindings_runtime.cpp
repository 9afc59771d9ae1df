// Runtime bindings: runtime::Runtime over numpy arrays (python/atvoss/runtime.py wraps them).
// Every buffer is checked here against the workload's operand sizes before a pointer reaches
// a kernel, so a wrong shape is a ValueError, never a read past an array. The GIL is released
// while the kernel (and a first-use compile) runs.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "core/error.hpp"
#include "runtime/runtime.hpp"

namespace atvoss::python {
namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

// A C-contiguous float32 view of obj (copied only if strided); TypeError for another dtype.
FloatArray float32_array(const py::object& obj, const char* name) {
  if (!py::isinstance<py::array>(obj)) {
    throw py::type_error(std::string("runtime: '") + name + "' must be a numpy float32 array, got " +
                         std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
  const auto array = py::reinterpret_borrow<py::array>(obj);
  if (!array.dtype().is(py::dtype::of<float>())) {
    throw py::type_error(std::string("runtime: '") + name + "' must have dtype float32, got " +
                         std::string(py::str(array.dtype())));
  }
  return FloatArray::ensure(obj);
}

std::string shape_text(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// The epilogue operands as arrays checked against the workload; a given operand that no op
// reads is refused too (it would be silently ignored otherwise).
struct Epilogue {
  std::vector<std::string> ops;
  std::optional<FloatArray> bias, scale, shift, residual;

  Epilogue(std::vector<std::string> names, const py::object& b, const py::object& sc, const py::object& sh,
           const py::object& res)
      : ops(std::move(names)) {
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
    const Workload w =
        batched ? runtime::batch_matmul_workload(batch, m, n, k, e.ops) : runtime::matmul_workload(m, n, k, e.ops);
    std::vector<py::ssize_t> out_shape = {m, n};
    if (batched) out_shape.insert(out_shape.begin(), batch);
    return run(w, a, b, out_shape, e, with_choice);
  }

  // (output, choice JSON or None). input (N, H, W, C), filter (R, S, C, K): the host's NHWC and
  // HWIO layouts (docs/host-backend.md), so no copy is made.
  py::tuple conv2d(const py::object& in_obj, const py::object& f_obj, std::int64_t stride, std::int64_t pad,
                   const Epilogue& e, bool with_choice) {
    const FloatArray in = float32_array(in_obj, "input"), f = float32_array(f_obj, "filter");
    if (in.ndim() != 4 || f.ndim() != 4 || f.shape(2) != in.shape(3)) {
      throw_bad_input("runtime: conv2d takes input (N, H, W, C) and filter (R, S, C, K), got " + shape_text(in) +
                      " and " + shape_text(f));
    }
    const runtime::Conv2dShape s{in.shape(0), in.shape(3), in.shape(1), in.shape(2), f.shape(3),
                                 f.shape(0),  f.shape(1),  stride,      pad};
    const Workload w = runtime::conv2d_workload(s, e.ops);
    return run(w, in, f, {s.n, w.out_h(), w.out_w(), s.k}, e, with_choice);
  }

 private:
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
  py::tuple run(const Workload& w, const FloatArray& a, const FloatArray& b, const std::vector<py::ssize_t>& out_shape,
                const Epilogue& e, bool with_choice) {
    const runtime::OperandSizes n = runtime::operand_sizes(w);
    if (a.size() != n.a || b.size() != n.b) throw internal_error("operand sizes disagree with " + w.label());
    FloatArray c(out_shape);
    const runtime::EpilogueArgs ep = e.args(n, out_shape);
    const host::AtvossArgs args{a.data(), b.data(), c.mutable_data(), ep.bias, ep.scale, ep.shift, ep.residual,
                                nullptr,  nullptr,  nullptr,          nullptr, ep.qout,  0};
    const runtime::Choice* choice = nullptr;
    {
      py::gil_scoped_release release;
      choice = &rt_.run(w, args);
    }
    return py::make_tuple(c, with_choice ? py::object(py::str(dump(choice->to_json()))) : py::none());
  }

  static Error internal_error(const std::string& what) { return Error(ErrorKind::internal, "runtime: " + what); }

  runtime::Runtime rt_;
};

}  // namespace

void bind_runtime(py::module_& m) {
  py::class_<Epilogue>(m, "RuntimeEpilogue")
      .def(py::init<std::vector<std::string>, py::object, py::object, py::object, py::object>(), py::arg("ops"),
           py::arg("bias"), py::arg("scale"), py::arg("shift"), py::arg("residual"));
  py::class_<PyRuntime>(m, "Runtime")
      .def(py::init<std::optional<std::string>, std::string, std::string>(), py::arg("table"), py::arg("cache_dir"),
           py::arg("foreign_table"))
      .def("choose", &PyRuntime::choose)
      .def("no_table_reason", &PyRuntime::no_table_reason)
      .def("matmul", &PyRuntime::matmul)
      .def("conv2d", &PyRuntime::conv2d);
}

}  // namespace atvoss::python
