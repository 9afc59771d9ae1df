// Backends written in Python (atvoss.register_backend, python/atvoss/backend.py): PyBackend
// puts a Python object behind backend::Backend, so tune and jobs find it through
// backend_for() like a built-in one (asked first, as register_backend promises). Every call
// takes the GIL; values cross as JSON text and plain dicts, which the Python base class turns
// into Workload and Target objects. A Python error in measure() is that candidate's
// runtime_error, never the tuner's; one in serves/space/default is the caller's error.
// measure() runs under the backend's call_timeout_s (CallDeadline): past it the schedule is
// a timeout, and a caller's cancel (Ctrl-C) stops it as it stops a host kernel.
#include <pybind11/stl.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <sstream>
#include "backend/backend.hpp"

#include "bindings.hpp"
#include "call_deadline.hpp"
#include "core/error.hpp"

namespace atvoss::python {
namespace {

// The message of a Python error, for a Measurement or an Error.
std::string python_error_text(py::error_already_set& e) {
  if (e.matches(PyExc_KeyboardInterrupt)) throw;  // Ctrl-C stops the tune, as everywhere
  return e.what();
}

class PyBackend final : public backend::Backend {
 public:
  PyBackend(std::string name, SharedObject instance, bool noisy)
      : name_(std::move(name)), instance_(std::move(instance)), noisy_(noisy) {}

  std::string name() const override { return name_; }
  // Read once, at registration (the class's `noisy`): asked on every tune's set-up.
  backend::BackendTraits traits(const Target&) const override { return {noisy_, 0}; }

  bool serves(const Workload& w, const Target& t) const override {
    py::gil_scoped_acquire gil;  // held while the returned object lives
    return call("_atvoss_serves", w, t).cast<bool>();
  }

  ScheduleSpace space(const Workload& w, const Target& t) const override {
    std::vector<Knob> knobs;
    {
      py::gil_scoped_acquire gil;
      const auto values =
          call("_atvoss_space", w, t).cast<std::vector<std::pair<std::string, std::vector<std::int64_t>>>>();
      for (const auto& [name, list] : values) knobs.push_back(Knob{name, list});
    }
    if (knobs.empty()) throw_bad_input("backend '" + name_ + "': space() gave no knobs");
    // The check calls back into Python: a Python backend's space is the user's to define.
    auto check = [instance = instance_, wj = dump(w.to_json()), tj = dump(t.to_json()),
                  name = name_](const Schedule& s) -> Verdict {
      py::gil_scoped_acquire gil;
      try {
        const auto reason = instance->attr("_atvoss_check")(wj, tj, s.values()).cast<std::string>();
        return reason.empty() ? Verdict::valid() : Verdict::invalid(reason);
      } catch (py::error_already_set& e) {
        throw Error(ErrorKind::bad_input, "backend '" + name + "': check() raised " + python_error_text(e));
      }
    };
    return ScheduleSpace(std::move(knobs), std::move(check));
  }

  std::optional<Schedule> default_schedule(const Workload& w, const Target& t) const override {
    py::gil_scoped_acquire gil;
    const py::object d = call("_atvoss_default", w, t);
    if (d.is_none()) return std::nullopt;
    return Schedule(d.cast<std::map<std::string, std::int64_t>>());
  }

  std::optional<lowering::KernelPlan> lower(const Workload&, const Target&, const Schedule&) const override {
    return std::nullopt;  // no lowering: the cost model sees knobs only
  }

  std::vector<Measurement> measure(std::span<const backend::MeasureRequest> batch,
                                   const backend::MeasureOptions&) const override {
    std::map<std::string, ScheduleSpace> spaces;  // one space() call per (workload, target) of the batch
    std::vector<Measurement> out;
    for (const auto& r : batch) {
      const std::string key = r.workload.key() + " " + r.target.key();
      auto it = spaces.find(key);
      if (it == spaces.end()) it = spaces.emplace(key, space(r.workload, r.target)).first;
      out.push_back(measure_one(r, it->second));
    }
    return out;
  }

 private:
  Measurement measure_one(const backend::MeasureRequest& r, const ScheduleSpace& sp) const {
    if (!sp.point_of(r.schedule)) {
      throw_bad_input("backend '" + name_ + "': schedule " + r.schedule.to_json().dump() + " is not in its space");
    }
    if (const Verdict v = sp.check(r.schedule); !v.ok) return Measurement::failed(Status::invalid, v.reason);
    py::gil_scoped_acquire gil;
    const auto limit = call_timeout(*instance_);
    CallDeadline::Fired fired = CallDeadline::Fired::no;
    try {
      py::object times;
      {
        CallDeadline deadline(limit, r.cancel);
        try {
          times = instance_->attr("_atvoss_measure")(dump(r.workload.to_json()), dump(r.target.to_json()),
                                                     r.schedule.values(), r.repeat);
        } catch (py::error_already_set& e) {
          fired = e.matches(PyExc_TimeoutError) ? deadline.fired() : CallDeadline::Fired::no;
          throw;
        }
      }
      Measurement m;
      m.repeats = times.cast<std::vector<double>>();
      for (const double us : m.repeats) {
        if (!(us > 0 && std::isfinite(us))) {
          return Measurement::failed(Status::runtime_error,
                                     "measure() gave a time that is not > 0: " + std::to_string(us));
        }
      }
      if (m.repeats.empty()) return Measurement::failed(Status::runtime_error, "measure() gave no time");
      m.time_us = median(m.repeats);
      return m;
    } catch (py::error_already_set& e) {
      if (fired == CallDeadline::Fired::cancel) return Measurement::failed(Status::error, kCancelledMessage);
      if (fired == CallDeadline::Fired::limit) {
        std::ostringstream seconds;
        seconds << limit->count();
        return Measurement::failed(
            Status::timeout, "measure() did not return within " + seconds.str() + " s (the backend's call_timeout_s)");
      }
      return Measurement::failed(Status::runtime_error, python_error_text(e));
    } catch (const py::cast_error&) {
      return Measurement::failed(Status::runtime_error, "measure() must return a time in us or a list of them");
    }
  }

  // instance._atvoss_<method>(workload JSON, target JSON) under the GIL; a Python error is
  // bad_input naming the backend and the method.
  py::object call(const char* method, const Workload& w, const Target& t) const {
    py::gil_scoped_acquire gil;
    try {
      return instance_->attr(method)(dump(w.to_json()), dump(t.to_json()));
    } catch (py::error_already_set& e) {
      throw Error(ErrorKind::bad_input,
                  "backend '" + name_ + "': " + std::string(method + 8) + "() raised " + python_error_text(e));
    }
  }

  std::string name_;
  SharedObject instance_;
  bool noisy_ = false;
};

}  // namespace

void bind_backends(py::module_& m) {
  m.def(
      "register_backend",
      [](const std::string& name, py::object instance, bool noisy) {
        backend::register_backend(std::make_shared<PyBackend>(name, share(std::move(instance)), noisy));
      },
      py::arg("name"), py::arg("instance"), py::arg("noisy"));
  m.def("backend_names", &backend::backend_names);
}

}  // namespace atvoss::python
