// Tuning bindings: tune one workload (tuner::tune_single), run a job spec (report::run_and_report)
// and measure schedules through the backend that serves them (backend::backend_for).
// The GIL is released for the C++ work; the per-round callbacks (tune's on_round, the job
// runner's JobRunOptions::on_round) take it back to report progress and to let Ctrl-C
// through (PyErr_CheckSignals): the exception unwinds the tuner between rounds, and every
// finished round is stored already (tuner/tuner.hpp), so the database resumes where it
// stopped.
#include <pybind11/stl.h>

#include <limits>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "bindings.hpp"
#include "core/error.hpp"
#include "report/job_report.hpp"
#include "tuner/job_spec.hpp"
#include "tuner/single_tune.hpp"

namespace atvoss::python {
namespace {

// A spec field as a T, or its default when absent; bad_input naming the field otherwise.
template <typename T>
T field_or(const Json& spec, const char* name, T fallback) {
  if (!spec.contains(name) || spec[name].is_null()) return fallback;
  if constexpr (std::is_integral_v<T>) {
    return integer_as<T>(spec[name], name, "tune");
  }
  try {
    return spec[name].get<T>();
  } catch (const Json::exception&) {
    throw_bad_input(std::string("tune: field '") + name + "' has the wrong type");
  }
}

tuner::SingleTuneSpec single_spec(const Json& j) {
  tuner::SingleTuneSpec s;
  s.workload = require_field(j, "workload", "tune");
  s.target = require_string(j, "target", "tune");
  s.trials = field_or<int>(j, "trials", 0);
  s.strategy = field_or<std::string>(j, "strategy", s.strategy);
  s.cost_model = field_or<std::string>(j, "cost_model", s.cost_model);
  s.db = field_or<std::string>(j, "db", "");
  s.export_path = field_or<std::string>(j, "export", "");
  s.farm = field_or<std::string>(j, "farm", "");
  s.repeat = field_or<int>(j, "repeat", s.repeat);
  s.batch_size = field_or<int>(j, "batch_size", s.batch_size);
  s.early_stopping = field_or<int>(j, "early_stopping", s.early_stopping);
  s.seed = field_or<std::uint64_t>(j, "seed", 0);
  return s;
}

Json progress_json(const tuner::TuneProgress& p) {
  return {{"trials", p.trials}, {"budget", p.budget}, {"best_us", p.best_us}, {"default_us", p.default_us}};
}

Json result_json(const tuner::SingleTuneOutcome& out) {
  const tuner::TuneResult& r = out.result;
  Json j{{"workload", out.workload.to_json()}, {"target", out.target.to_json()},
         {"best_us", r.best_us}, {"default_us", r.default_us}, {"trials", r.trials},
         {"resumed", r.resumed}, {"measured", r.measured}, {"curve", r.curve},
         {"stop_reason", r.stop_reason}};
  j["best_schedule"] = r.best_schedule ? r.best_schedule->to_json() : Json();
  j["best"] = r.best_schedule ? r.best.to_json() : Json();
  return j;
}

// Runs with the GIL released; on_round re-acquires it for signals and progress.
std::string tune(const std::string& spec_text, const py::object& progress) {
  const tuner::SingleTuneSpec spec = single_spec(parse(spec_text, "tune"));
  const py::object* callback = progress.is_none() ? nullptr : &progress;
  tuner::TuneCallbacks callbacks;
  callbacks.on_round = [callback](const tuner::TuneProgress& p) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (callback) (*callback)(py::module_::import("json").attr("loads")(dump(progress_json(p))));
  };
  tuner::SingleTuneOutcome out;
  {
    py::gil_scoped_release release;
    out = tuner::tune_single(spec, callbacks);
  }
  return dump(result_json(out));
}

std::string run_job(const std::string& spec_text, bool is_path, bool quiet) {
  const tuner::JobSpec spec =
      is_path ? tuner::JobSpec::load(spec_text) : tuner::JobSpec::from_json(parse(spec_text, "job spec"));
  tuner::JobRunOptions options;
  options.quiet = quiet;
  // As in tune: between rounds, take the GIL and let a pending Ctrl-C through. The rounds
  // done are committed, so the job resumes where it stopped.
  options.on_round = [] {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  };
  report::JobOutcome out;
  {
    py::gil_scoped_release release;
    out = report::run_and_report(spec, options);
  }
  Json j = out.summary;
  j["default_us"] = out.default_us;
  j["tuned_us"] = out.tuned_us;
  return dump(j);
}

// One measurement per schedule, each with the seed the tuner would use for it.
std::string measure(const std::string& workload, const std::string& target, const std::string& schedules,
                    int repeat, std::uint64_t seed, double noise) {
  if (repeat < 1) throw_bad_input("measure: field 'repeat' must be >= 1");
  if (!(noise >= 0)) throw_bad_input("measure: field 'noise' must be >= 0");
  const Workload w = Workload::from_json(parse(workload, "workload"));
  const Target t = backend::load_target(target);
  const backend::Backend& b = backend::backend_for(w, t);
  const ScheduleSpace space = b.space(w, t);
  const Json list = parse(schedules, "schedules");
  if (!list.is_array()) throw_bad_input("measure: field 'schedules' must be a list");
  std::vector<backend::MeasureRequest> batch;
  for (const auto& s : list) {
    const Schedule schedule = space.parse(s);
    batch.push_back({w, t, schedule, repeat, tuner::measurement_seed(seed, w, schedule)});
  }
  std::vector<Measurement> results;
  {
    py::gil_scoped_release release;
    results = b.measure(batch, {.noise = noise});
  }
  Json out = Json::array();
  for (const auto& m : results) out.push_back(m.to_json());
  return dump(out);
}

}  // namespace

void bind_tuning(py::module_& m) {
  m.def("tune", &tune, py::arg("spec"), py::arg("progress"), "Tunes one workload; result JSON");
  m.def("run_job", &run_job, py::arg("spec"), py::arg("is_path"), py::arg("quiet"), "Runs a job; summary JSON");
  m.def("measure", &measure, py::arg("workload"), py::arg("target"), py::arg("schedules"), py::arg("repeat"),
        py::arg("seed"), py::arg("noise"), "Measures schedules; list of measurement JSON");
}

}  // namespace atvoss::python
