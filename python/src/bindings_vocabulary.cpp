// Vocabulary bindings: canonical Workload, Target and Schedule JSON, schedule spaces and
// their validity check, the vendor default, zoo models, and the backends' reading of a
// measurement (backend::analyze; without a workload and target, simulator::analyze).
// Targets cross as text that backend::load_target reads (a preset name, a file or JSON),
// so every form the CLIs accept works here too.
#include <pybind11/stl.h>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "bindings.hpp"
#include "core/error.hpp"
#include "core/measurement.hpp"
#include "core/schedule.hpp"
#include "core/workload.hpp"
#include "frontend/model_zoo.hpp"
#include "frontend/training.hpp"
#include "simulator/analysis.hpp"

namespace atvoss::python {
namespace {

Workload workload_of(const std::string& text) { return Workload::from_json(parse(text, "workload")); }

py::tuple canonical_workload(const std::string& text) {
  const Workload w = workload_of(text);
  return py::make_tuple(dump(w.to_json()), w.key(), w.label());
}

py::tuple load_target(const std::string& arg) {
  const Target t = backend::load_target(arg);
  return py::make_tuple(dump(t.to_json()), t.key(), t.name);
}

std::string canonical_schedule(const std::string& text) {
  return dump(Schedule::from_json(parse(text, "schedule")).to_json());
}

std::string schedule_key(const std::string& text) { return Schedule::from_json(parse(text, "schedule")).key(); }

}  // namespace

Space::Space(ScheduleSpace space, std::string backend, std::optional<Schedule> fallback)
    : space_(std::move(space)), backend_(std::move(backend)), default_(std::move(fallback)) {}

Space Space::of(const std::string& workload, const std::string& target) {
  const Workload w = workload_of(workload);
  const Target t = backend::load_target(target);
  const backend::Backend& b = backend::backend_for(w, t);
  return Space(b.space(w, t), b.name(), b.default_schedule(w, t));
}

std::string Space::describe() const { return dump(space_.describe()); }

py::tuple Space::check(const std::map<std::string, std::int64_t>& values) const {
  const Verdict v = space_.check(space_.parse(Json(values)));
  return py::make_tuple(v.ok, v.reason);
}

py::object Space::default_schedule() const {
  if (!default_) return py::none();
  return py::cast(default_->values());
}

namespace {

py::object default_schedule(const std::string& workload, const std::string& target) {
  const auto s = backend::default_schedule(workload_of(workload), backend::load_target(target));
  if (!s) return py::none();
  return py::str(dump(s->to_json()));
}

std::string zoo_model_json(const std::string& name, int batch, bool training) {
  Json tasks = Json::array();
  frontend::TaskSet model = frontend::zoo_model(name, batch);  // tasks() refers into it
  if (training) model = frontend::training_tasks(model);
  for (const auto& t : model.tasks()) {
    tasks.push_back({{"workload", t.workload.to_json()}, {"weight", t.weight}, {"name", t.name}});
  }
  return dump(tasks);
}

// The shares, bottleneck and hint of one ok measurement: its backend's reading where the
// workload and target are given, else atvoss-analyze's (the simulator's).
std::string analyze(const std::string& measurement, const std::string& schedule, const std::string& workload,
                    const std::string& target) {
  const Measurement m = Measurement::from_json(parse(measurement, "measurement"));
  if (!m.ok()) throw_bad_input("analyze: field 'status' must be ok, got " + std::string(to_string(m.status)));
  const Schedule s = Schedule::from_json(parse(schedule, "schedule"));
  const Analysis a = workload.empty() || target.empty()
                         ? simulator::analyze(m, s)
                         : backend::analyze(workload_of(workload), backend::load_target(target), m, s);
  return dump({{"compute_share", a.compute_share},
               {"dma_share", a.dma_share},
               {"sync_share", a.sync_share},
               {"launch_share", a.launch_share},
               {"bottleneck", a.bottleneck},
               {"hint", a.hint}});
}

}  // namespace

void bind_vocabulary(py::module_& m) {
  m.def("canonical_workload", &canonical_workload, "(canonical JSON, key, label) of a workload's JSON");
  m.def("load_target", &load_target, "(JSON, key, name) of a preset name, file or JSON text");
  m.def("target_names", &backend::target_names, "Names of the target presets");
  m.def("backend_names", &backend::backend_names, "Names of the registered backends");
  m.def("canonical_schedule", &canonical_schedule, "Canonical JSON of a schedule");
  m.def("schedule_key", &schedule_key, "Stable key of a schedule");
  py::class_<Space>(m, "Space", "The schedule space of one (workload, target) in C++")
      .def_static("of", &Space::of, py::arg("workload"), py::arg("target"))
      .def("describe", &Space::describe, "The space's description JSON")
      .def("check", &Space::check, py::arg("values"), "(ok, reason); bad_input for unknown knobs")
      .def("default", &Space::default_schedule, "The vendor default's knob values, or None")
      .def_property_readonly("backend", &Space::backend);
  m.def("default_schedule", &default_schedule, "The vendor default's JSON, or None");
  m.def("zoo_names", &frontend::zoo_names, "Names of the zoo models");
  m.def("zoo_model", &zoo_model_json, "Tasks of a zoo model (at a batch, or its training step) as JSON",
        py::arg("name"), py::arg("batch") = 0, py::arg("training") = false);
  m.def("analyze", &analyze, "The backend's reading of one measurement as JSON (atvoss-analyze's without one)",
        py::arg("measurement"), py::arg("schedule"), py::arg("workload") = "", py::arg("target") = "");
}

}  // namespace atvoss::python
