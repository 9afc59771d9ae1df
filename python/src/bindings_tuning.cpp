// Tuning bindings: tune one workload (tuner::tune_single), run a job spec (report::run_and_report)
// and measure schedules through the backend that serves them (backend::backend_for).
// Each runs interruptibly (interruptible.hpp): the GIL is released, Ctrl-C stops it within
// a fraction of a second, killing the host's kernels in flight; every finished trial is
// stored (tune, jobs), so the database resumes where it stopped, and measure() returns the
// measurements that finished. tune reports every trial as it finishes (on_trial).
#include <pybind11/stl.h>

#include <atomic>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "bindings.hpp"
#include "core/error.hpp"
#include "core/recorded_space.hpp"
#include "interruptible.hpp"
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
  if (j.contains("strategy_config")) s.strategy_config = j["strategy_config"];
  s.cost_model = field_or<std::string>(j, "cost_model", s.cost_model);
  s.db = field_or<std::string>(j, "db", "");
  s.export_path = field_or<std::string>(j, "export", "");
  s.farm = field_or<std::string>(j, "farm", "");
  s.repeat = field_or<int>(j, "repeat", s.repeat);
  s.batch_size = field_or<int>(j, "batch_size", s.batch_size);
  s.early_stopping = field_or<int>(j, "early_stopping", s.early_stopping);
  s.confirm_top = field_or<int>(j, "confirm_top", s.confirm_top);
  s.seed = field_or<std::uint64_t>(j, "seed", 0);
  return s;
}

// The first exception a Python callback raised on a measuring thread; it cancels the run
// and is raised in the caller's thread once the run has stopped.
class CallbackFailure {
 public:
  explicit CallbackFailure(std::shared_ptr<std::atomic<bool>> cancel) : cancel_(std::move(cancel)) {}
  void record() {
    const std::lock_guard lock(mu_);
    if (!failure_) failure_ = std::current_exception();
    cancel_->store(true);
  }
  void rethrow() const {
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  std::shared_ptr<std::atomic<bool>> cancel_;
  std::mutex mu_;
  std::exception_ptr failure_;
};

Json trial_json(const tuner::TrialProgress& p) {
  return {{"trials", p.trial},
          {"budget", p.budget},
          {"best_us", p.best_us},
          {"default_us", p.default_us},
          {"workload", p.workload->to_json()},
          {"target", p.target->to_json()},
          {"schedule", p.schedule->to_json()},
          {"measurement", p.measurement->to_json()}};
}

// on_trial (or None) as the tuner's per-trial callback: it gets each trial's JSON text,
// under the GIL; what it raises is recorded and cancels the run.
std::function<void(const tuner::TrialProgress&)> trial_callback(const py::object& on_trial, CallbackFailure& failure) {
  if (on_trial.is_none()) return {};
  return [&on_trial, &failure](const tuner::TrialProgress& p) {
    py::gil_scoped_acquire gil;
    try {
      on_trial(dump(trial_json(p)));
    } catch (...) {
      failure.record();
    }
  };
}

Json result_json(const tuner::SingleTuneOutcome& out) {
  const tuner::TuneResult& r = out.result;
  Json j{{"workload", out.workload.to_json()},
         {"target", out.target.to_json()},
         {"best_us", r.best_us},
         {"default_us", r.default_us},
         {"trials", r.trials},
         {"resumed", r.resumed},
         {"measured", r.measured},
         {"curve", r.curve},
         {"stop_reason", r.stop_reason},
         {"confirmed", r.confirmed},
         {"pick_changed", r.pick_changed}};
  j["best_schedule"] = r.best_schedule ? r.best_schedule->to_json() : Json();
  j["best"] = r.best_schedule ? r.best.to_json() : Json();
  // What best_us ranks: a Kernel Tuner cache tuned for another objective keeps its cost there.
  j["objective"] = out.workload.is_recorded() ? RecordedSpace::load(out.workload.table())->objective().to_json()
                                              : kernel_tuner::Objective().to_json();
  return j;
}

// on_trial (or None) gets each trial's JSON text as it finishes.
std::string tune(const std::string& spec_text, const py::object& on_trial) {
  const tuner::SingleTuneSpec spec = single_spec(parse(spec_text, "tune"));
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  CallbackFailure callback_failure(cancel);
  tuner::TuneCallbacks callbacks;
  callbacks.on_trial = trial_callback(on_trial, callback_failure);
  tuner::SingleTuneOutcome out;
  if (run_interruptible([&] { out = tuner::tune_single(spec, callbacks, cancel); }, raising(cancel))) {
    throw py::error_already_set();
  }
  callback_failure.rethrow();
  return dump(result_json(out));
}

std::string run_job(const std::string& spec_text, bool is_path, bool quiet, const py::object& on_trial) {
  const tuner::JobSpec spec =
      is_path ? tuner::JobSpec::load(spec_text) : tuner::JobSpec::from_json(parse(spec_text, "job spec"));
  tuner::JobRunOptions options;
  options.quiet = quiet;
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  options.cancel = cancel;
  CallbackFailure callback_failure(cancel);
  options.on_trial = trial_callback(on_trial, callback_failure);
  report::JobOutcome out;
  // Interrupted, the job is marked "stopped" with its finished trials committed, so
  // rerunning the same spec resumes it.
  if (run_interruptible([&] { out = report::run_and_report(spec, options); }, raising(cancel))) {
    throw py::error_already_set();
  }
  callback_failure.rethrow();
  Json j = out.summary;
  j["default_us"] = out.default_us;
  j["tuned_us"] = out.tuned_us;
  return dump(j);
}

// One measurement per schedule, each with the seed the tuner would use for it.
std::string measure(const std::string& workload, const std::string& target, const std::string& schedules, int repeat,
                    std::uint64_t seed, double noise) {
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
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  for (auto& r : batch) r.cancel = cancel;
  std::vector<Measurement> results;
  // Interrupted, what finished is returned; the rest is `error` (core/cancel.hpp) and
  // "interrupted" tells Python to warn. The KeyboardInterrupt is not raised: the
  // measurements are the caller's to keep.
  const bool interrupted = run_interruptible([&] { results = b.measure(batch, {.noise = noise}); }, raising(cancel));
  if (interrupted) PyErr_Clear();
  Json out = Json::array();
  for (const auto& m : results) out.push_back(m.to_json());
  return dump(Json{{"measurements", out}, {"interrupted", interrupted}});
}

}  // namespace

void bind_tuning(py::module_& m) {
  m.def("tune", &tune, py::arg("spec"), py::arg("on_trial"), "Tunes one workload; result JSON");
  m.def("run_job", &run_job, py::arg("spec"), py::arg("is_path"), py::arg("quiet"), py::arg("on_trial"),
        "Runs a job; summary JSON");
  m.def("measure", &measure, py::arg("workload"), py::arg("target"), py::arg("schedules"), py::arg("repeat"),
        py::arg("seed"), py::arg("noise"), "Measures schedules; list of measurement JSON");
}

}  // namespace atvoss::python
