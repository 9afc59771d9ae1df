// The _atvoss extension module: registers every group of bindings and maps C++ errors to
// Python exceptions (atvoss::Error bad_input -> ValueError, every other kind and any
// std::exception -> RuntimeError), so no C++ exception reaches the interpreter as an abort.
#include <exception>

#include "bindings.hpp"
#include "core/error.hpp"
#include "core/user_paths.hpp"

namespace atvoss::python {

Json parse(const std::string& text, const char* what) { return parse_json(text, what); }

std::string dump(const Json& j) { return j.dump(); }

SharedObject share(py::object o) {
  return SharedObject(new py::object(std::move(o)), [](py::object* p) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    delete p;
  });
}

namespace {

// Raises type with text. A message may quote the input's bytes (a line of a non-UTF-8
// file): PyErr_SetString would then leave an empty message, so invalid bytes become U+FFFD.
void set_error(PyObject* type, const std::string& text) {
  PyObject* message = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  PyErr_SetObject(type, message);
  Py_XDECREF(message);
}

}  // namespace

}  // namespace atvoss::python

PYBIND11_MODULE(_atvoss, m) {
  namespace py = pybind11;
  using namespace atvoss;
  m.doc() = "C++ core of the atvoss Python package; use the atvoss package, not this module.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      if (e.is_bad_input()) {
        python::set_error(PyExc_ValueError, e.what());
      } else {
        python::set_error(PyExc_RuntimeError, std::string(to_string(e.kind())) + ": " + e.what());
      }
    } catch (const Json::exception& e) {
      python::set_error(PyExc_ValueError, e.what());
    }
  });
  python::bind_vocabulary(m);
  python::bind_tuning(m);
  python::bind_database(m);
  python::bind_strategies(m);
  python::bind_runtime(m);
  python::bind_quantization(m);
  python::bind_optimizer(m);
  python::bind_backends(m);
  python::bind_worker(m);
  python::bind_graph(m);
  python::bind_execution(m);
  python::bind_engine(m);
  m.attr("MAX_INPUT_FILE_BYTES") = kMaxInputFileBytes;  // one bound for C++ and Python reads
}
