// Engine bindings: engine::Model over numpy arrays (python/atvoss/runtime.py's Model wraps it).
// Each input is checked against the model's shape before a pointer reaches a step, so a wrong
// shape or dtype is a ValueError or TypeError; the GIL is released while the model loads (its
// kernels compile) and while it runs.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "core/error.hpp"
#include "engine/model.hpp"

namespace atvoss::python {
namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

class PyModel {
 public:
  PyModel(const std::string& path, const std::string& plan, int batch, int threads, const std::string& cache_dir,
          const std::map<std::string, std::int64_t>& dims,
          const std::map<std::string, std::vector<std::int64_t>>& input_shapes) {
    engine::ModelOptions o;
    o.plan = plan;
    o.batch = batch;
    o.dims = dims;
    o.input_shapes = input_shapes;
    o.threads = threads;
    o.build.cache_dir = cache_dir;
    py::gil_scoped_release release;
    model_ = std::make_unique<engine::Model>(path, o);
  }

  std::vector<std::pair<std::string, std::vector<std::int64_t>>> infos(bool inputs) const {
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> out;
    for (const auto& t : inputs ? model_->inputs() : model_->outputs()) out.emplace_back(t.name, t.shape);
    return out;
  }

  std::vector<std::pair<std::string, std::string>> dtypes(bool inputs) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& t : inputs ? model_->inputs() : model_->outputs()) out.emplace_back(t.name, t.dtype);
    return out;
  }

  std::vector<FloatArray> run(const std::vector<py::object>& inputs) {
    std::vector<FloatArray> held;
    const auto in = checked(inputs, held);
    std::vector<FloatArray> out;
    std::vector<float*> ptrs;
    for (const auto& o : model_->outputs()) {
      out.emplace_back(std::vector<py::ssize_t>(o.shape.begin(), o.shape.end()));
      ptrs.push_back(out.back().mutable_data());
    }
    {
      py::gil_scoped_release release;
      model_->run(in, ptrs);
    }
    return out;
  }

 private:
  // Pointers to inputs, each checked against the model's dtype and shape (held keeps copies).
  std::vector<const float*> checked(const std::vector<py::object>& inputs, std::vector<FloatArray>& held) const {
    const auto& infos = model_->inputs();
    if (inputs.size() != infos.size()) {
      throw py::value_error("Model.run: " + std::to_string(infos.size()) + " inputs expected, got " +
                            std::to_string(inputs.size()));
    }
    std::vector<const float*> in;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto array = py::reinterpret_borrow<py::array>(inputs[i]);
      // An integer or bool input takes integer, bool or float32 arrays: the engine holds its
      // values as floats and checks each one (engine/model.hpp).
      const char kind = py::isinstance<py::array>(inputs[i]) ? array.dtype().kind() : '?';
      const bool integer = infos[i].dtype != "float";
      if (!array.dtype().is(py::dtype::of<float>()) && !(integer && (kind == 'i' || kind == 'u' || kind == 'b'))) {
        throw py::type_error("Model.run: input '" + infos[i].name + "' must be a " +
                             (integer ? "numpy array of integers (" + infos[i].dtype + ")" : "float32 numpy array"));
      }
      held.push_back(FloatArray::ensure(inputs[i]));
      const auto& a = held.back();
      if (std::vector<std::int64_t>(a.shape(), a.shape() + a.ndim()) != infos[i].shape) {
        throw py::value_error("Model.run: input '" + infos[i].name + "' has another shape than the model's");
      }
      in.push_back(a.data());
    }
    return in;
  }

 public:
  std::string describe() const { return model_->describe().dump(); }

  std::string profile(const std::vector<py::object>& inputs, int runs) {
    std::vector<FloatArray> held;
    const auto in = checked(inputs, held);
    py::gil_scoped_release release;
    return model_->profile(in, runs).dump();
  }

 private:
  std::unique_ptr<engine::Model> model_;
};

}  // namespace

void bind_engine(py::module_& m) {
  py::class_<PyModel>(m, "Model")
      .def(py::init<std::string, std::string, int, int, std::string, std::map<std::string, std::int64_t>,
                    std::map<std::string, std::vector<std::int64_t>>>(),
           py::arg("path"), py::arg("plan"), py::arg("batch"), py::arg("threads"), py::arg("cache_dir"),
           py::arg("dims"), py::arg("input_shapes"))
      .def("inputs", [](const PyModel& p) { return p.infos(true); })
      .def("input_dtypes", [](const PyModel& p) { return p.dtypes(true); })
      .def("outputs", [](const PyModel& p) { return p.infos(false); })
      .def("output_dtypes", [](const PyModel& p) { return p.dtypes(false); })
      .def("run", &PyModel::run)
      .def("describe", &PyModel::describe)
      .def("profile", &PyModel::profile, py::arg("inputs"), py::arg("runs"));
}

}  // namespace atvoss::python
