// Numpy arrays as the runtime and quantisation bindings take them: C-contiguous, of one element
// type, refused with a TypeError naming the argument and the dtype expected.
#pragma once

#include <pybind11/numpy.h>

#include <string>

#include "bindings.hpp"

namespace atvoss::python {

template <typename T>
using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;
using FloatArray = Array<float>;

// A C-contiguous view of obj with element type T (copied only if strided); TypeError naming
// `dtype` for another element type.
template <typename T>
inline Array<T> typed_array(const py::object& obj, const char* name, const char* dtype) {
  if (!py::isinstance<py::array>(obj)) {
    throw py::type_error(std::string("runtime: '") + name + "' must be a numpy " + dtype + " array, got " +
                         std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
  const auto array = py::reinterpret_borrow<py::array>(obj);
  if (!array.dtype().is(py::dtype::of<T>())) {
    throw py::type_error(std::string("runtime: '") + name + "' must have dtype " + dtype + ", got " +
                         std::string(py::str(array.dtype())));
  }
  return Array<T>::ensure(obj);
}

inline FloatArray float32_array(const py::object& obj, const char* name) {
  return typed_array<float>(obj, name, "float32");
}

}  // namespace atvoss::python
