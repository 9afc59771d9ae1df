// The _atvoss extension module: registers every group of bindings and maps C++ errors to
// Python exceptions (atvoss::Error bad_input -> ValueError, every other kind and any
// std::exception -> RuntimeError), so no C++ exception reaches the interpreter as an abort.
#include <exception>

#include "bindings.hpp"
#include "core/error.hpp"

namespace atvoss::python {

Json parse(const std::string& text, const char* what) { return parse_json(text, what); }

std::string dump(const Json& j) { return j.dump(); }

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
        PyErr_SetString(PyExc_ValueError, e.what());
      } else {
        PyErr_SetString(PyExc_RuntimeError, (std::string(to_string(e.kind())) + ": " + e.what()).c_str());
      }
    } catch (const Json::exception& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  python::bind_vocabulary(m);
  python::bind_tuning(m);
  python::bind_database(m);
  python::bind_strategies(m);
  python::bind_runtime(m);
}
