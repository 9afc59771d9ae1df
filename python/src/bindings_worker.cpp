// Farm worker binding: serves a tuning farm from Python (rpc::Worker), so the backends
// registered in this process (atvoss.register_backend, written in Python) measure the farm's
// tasks for them. Runs interruptibly (interruptible.hpp): Ctrl-C stops the worker, which
// drops what it was measuring (the coordinator requeues it), and raises KeyboardInterrupt.
#include <pybind11/stl.h>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "bindings.hpp"
#include "core/error.hpp"
#include "interruptible.hpp"
#include "rpc/auth.hpp"
#include "rpc/worker.hpp"

namespace atvoss::python {
namespace {

rpc::WorkerOptions worker_options(const Json& j) {
  rpc::WorkerOptions o;
  o.farm = rpc::parse_endpoint(require_string(j, "farm", "serve_worker"), "serve_worker: field 'farm'");
  for (const auto& t : require_field(j, "targets", "serve_worker")) {
    if (!t.is_string()) throw_bad_input("serve_worker: field 'targets' must be a list of targets");
    o.targets.push_back(backend::load_target(t.get<std::string>()));
  }
  if (o.targets.empty()) throw_bad_input("serve_worker: field 'targets' must name at least one target");
  o.backends = j.value("backends", std::vector<std::string>{});
  for (const auto& b : o.backends) backend::backend_named(b);  // bad_input listing them if unknown
  o.slots = integer_as<int>(j.value("slots", Json(0)), "slots", "serve_worker");
  if (o.slots < 0) throw_bad_input("serve_worker: field 'slots' must be >= 0");
  o.token = rpc::load_token(j.value("token_file", std::string()));
  o.recorded_dirs = j.value("recorded_dirs", std::vector<std::string>{});
  o.name = j.value("name", std::string());
  o.noise = j.value("noise", 0.02);
  if (!(o.noise >= 0)) throw_bad_input("serve_worker: field 'noise' must be >= 0");
  return o;
}

// Serves until Ctrl-C; returns how many tasks were measured if the worker stops otherwise.
std::uint64_t serve_worker(const std::string& options_text) {
  rpc::Worker worker(worker_options(parse(options_text, "serve_worker")));
  if (run_interruptible([&] { worker.run(); }, [&] { worker.stop(); })) throw py::error_already_set();
  return worker.measured();
}

}  // namespace

void bind_worker(py::module_& m) {
  m.def("serve_worker", &serve_worker, py::arg("options"), "Serves a tuning farm until Ctrl-C");
}

}  // namespace atvoss::python
