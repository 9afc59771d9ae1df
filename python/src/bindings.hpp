// Shared declarations of the _atvoss extension module (python/): each bindings_*.cpp
// adds one group of functions. Values cross the boundary as JSON text, which the pure
// Python layer (python/atvoss/) turns into its objects, so each C++ type is described
// once, by its to_json/from_json.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "core/json.hpp"

namespace atvoss::python {

namespace py = pybind11;

// JSON text from Python -> Json; bad_input naming what on a syntax error.
Json parse(const std::string& text, const char* what);
// Json -> compact text for Python's json.loads.
std::string dump(const Json& j);

void bind_vocabulary(py::module_& m);
void bind_tuning(py::module_& m);
void bind_database(py::module_& m);
void bind_strategies(py::module_& m);

}  // namespace atvoss::python
