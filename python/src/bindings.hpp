// Shared declarations of the _atvoss extension module (python/): each bindings_*.cpp
// adds one group of functions. Values cross the boundary as JSON text, which the pure
// Python layer (python/atvoss/) turns into its objects, so each C++ type is described
// once, by its to_json/from_json.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/json.hpp"
#include "core/schedule_space.hpp"

namespace atvoss::runtime {
class Runtime;
}  // namespace atvoss::runtime

namespace atvoss::python {

namespace py = pybind11;

// JSON text from Python -> Json; bad_input naming what on a syntax error.
Json parse(const std::string& text, const char* what);
// Json -> compact text for Python's json.loads.
std::string dump(const Json& j);

// One (workload, target) space held in C++, so a Python policy checks its proposals without
// resolving the target again for each one.
class Space {
 public:
  Space(ScheduleSpace space, std::string backend, std::optional<Schedule> fallback);
  static Space of(const std::string& workload, const std::string& target);
  std::string describe() const;
  py::tuple check(const std::map<std::string, std::int64_t>& values) const;
  py::object default_schedule() const;
  const std::string& backend() const { return backend_; }
  const ScheduleSpace& space() const { return space_; }

 private:
  ScheduleSpace space_;
  std::string backend_;
  std::optional<Schedule> default_;
};

// A Python object shared by C++ copies (std::function, registry entries) without touching
// its reference count off the GIL: the last owner drops it under the GIL, or leaks it if
// the interpreter is gone (process exit).
using SharedObject = std::shared_ptr<py::object>;
SharedObject share(py::object o);

void bind_vocabulary(py::module_& m);
void bind_tuning(py::module_& m);
void bind_database(py::module_& m);
void bind_strategies(py::module_& m);
void bind_runtime(py::module_& m);
// After bind_runtime: a Sensitivity takes a Runtime.
void bind_quantization(py::module_& m);
// The runtime::Runtime a Python Runtime (bind_runtime's) holds; TypeError for another object.
runtime::Runtime& runtime_of(const py::object& rt);
void bind_optimizer(py::module_& m);
void bind_backends(py::module_& m);
void bind_worker(py::module_& m);
void bind_graph(py::module_& m);
void bind_execution(py::module_& m);
void bind_engine(py::module_& m);

}  // namespace atvoss::python
