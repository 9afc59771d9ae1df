// Python search policies as search::SearchStrategy: register_strategy() puts a factory in
// the C++ strategy registry (search/strategy_registry.hpp), so a policy written in Python
// is usable by name wherever a strategy name is (tune, job specs). PyStrategy holds the
// Python object, takes the GIL around each call and enforces the SearchStrategy contract
// the tuner relies on (only valid, new, distinct schedules; update only for a pending
// batch), so a faulty policy fails with its own error instead of corrupting a session.
// A Python exception becomes StrategyFailure (atvoss.StrategyError) carrying the
// policy's name and traceback; KeyboardInterrupt passes through unchanged.
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "bindings.hpp"
#include "call_deadline.hpp"
#include "core/error.hpp"
#include "search/strategy_registry.hpp"

namespace atvoss::python {
namespace {

class StrategyFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw StrategyFailure("search strategy '" + name + "': " + what);
}

// Rethrows a Python error raised by the policy as its StrategyFailure, with the traceback.
[[noreturn]] void fail_python(const std::string& name, py::error_already_set& e) {
  if (e.matches(PyExc_KeyboardInterrupt)) throw;
  std::string text;
  try {
    const py::object lines = py::module_::import("traceback").attr("format_exception")(e.type(), e.value(), e.trace());
    text = py::str("").attr("join")(lines).cast<std::string>();
  } catch (const py::error_already_set&) {
    text = e.what();
  }
  fail(name, "raised\n" + text);
}

class PyStrategy final : public search::SearchStrategy {
 public:
  PyStrategy(std::string name, SharedObject instance, ScheduleSpace space)
      : name_(std::move(name)), instance_(std::move(instance)), space_(std::move(space)) {}

  std::string name() const override { return name_; }

  void observe(std::span<const search::Trial> history) override {
    if (pending_) throw Error(ErrorKind::internal, name_ + ": observe() while a batch is pending");
    std::vector<search::Trial> known;
    for (const auto& t : history) {
      if (is_infrastructure_error(t.status) || !space_.point_of(t.schedule)) continue;
      if (seen_.insert(t.schedule.key()).second) known.push_back(t);
    }
    trials_ += known.size();
    call("_atvoss_observe", known);
  }

  std::vector<Schedule> propose(std::size_t n) override {
    if (pending_) throw Error(ErrorKind::internal, name_ + ": propose() while a batch is pending (update() it)");
    std::vector<Schedule> batch;
    {
      py::gil_scoped_acquire gil;
      const py::list items = invoke("_atvoss_propose", "propose()", py::int_(n));
      for (const auto& item : items) batch.push_back(checked(item));
    }
    if (batch.size() > n)
      fail(name_, "proposed " + std::to_string(batch.size()) + " schedules, asked for " + std::to_string(n));
    pending_keys_.clear();
    for (const auto& s : batch) {
      if (!pending_keys_.insert(s.key()).second) fail(name_, "proposed " + s.to_json().dump() + " twice");
      if (seen_.count(s.key())) fail(name_, "proposed " + s.to_json().dump() + ", which was measured already");
    }
    pending_ = true;
    return batch;
  }

  void update(std::span<const search::Trial> results) override {
    if (!pending_) throw Error(ErrorKind::internal, name_ + ": update() without a pending batch (propose() first)");
    std::vector<search::Trial> stored;
    for (const auto& t : results) {
      if (!pending_keys_.count(t.schedule.key())) {
        throw_bad_input(name_ + ": update() for " + t.schedule.to_json().dump() + ", which is not in the batch");
      }
      if (is_infrastructure_error(t.status)) continue;  // may be proposed again
      seen_.insert(t.schedule.key());
      stored.push_back(t);
    }
    pending_ = false;
    trials_ += stored.size();
    call("_atvoss_update", stored);
  }

  Json save_state() const override { return {{"strategy", name_}, {"trials", trials_}}; }

  // Python policies keep no resumable state; a resumed job starts a fresh one, which the
  // session then shows the stored history (observe), as tuner/job_runner.cpp does on any
  // state that does not load.
  void load_state(const Json&) override {
    throw_bad_input("search strategy '" + name_ + "': Python strategies do not restore saved state");
  }

  std::size_t trials() const override { return trials_; }

 private:
  // A proposed item (a dict of knob values) as a valid schedule of the space.
  Schedule checked(const py::handle& item) const {
    if (!py::isinstance<py::dict>(item)) fail(name_, "propose() must give schedules (dicts of knob values)");
    Json j = Json::object();
    for (const auto& [k, v] : item.cast<py::dict>()) {
      const std::string knob = py::str(k).cast<std::string>();
      if (!py::isinstance<py::int_>(v)) fail(name_, "knob '" + knob + "' must be an int");
      try {
        j[knob] = v.cast<std::int64_t>();
      } catch (const py::cast_error&) {
        fail(name_, "knob '" + knob + "' = " + py::str(v).cast<std::string>().substr(0, 40) +
                        " does not fit in a 64-bit integer");
      }
    }
    Schedule s;
    try {
      s = space_.parse(j);
    } catch (const Error& e) {
      fail(name_, std::string("proposed a schedule outside the space: ") + e.what());
    }
    const Verdict v = space_.check(s);
    if (!v.ok) fail(name_, "proposed invalid schedule " + j.dump() + ": " + v.reason);
    return s;
  }

  void call(const char* method, const std::vector<search::Trial>& trials) {
    py::gil_scoped_acquire gil;
    py::list items;
    for (const auto& t : trials) {
      items.append(py::make_tuple(t.schedule.values(), std::string(to_string(t.status)), t.time_us));
    }
    invoke(method, std::string(method + std::strlen("_atvoss_")) + "()", items);  // shown as "update()"
  }

  // The policy's method called with arg under its deadline; a Python error, or the deadline
  // passing, becomes StrategyFailure. REQUIRES: the GIL.
  py::object invoke(const char* method, const std::string& shown, const py::object& arg) {
    const auto limit = call_timeout(*instance_);
    bool timed_out = false;
    try {
      CallDeadline deadline(limit);
      try {
        return instance_->attr(method)(arg);
      } catch (py::error_already_set&) {
        timed_out = deadline.fired() != CallDeadline::Fired::no;
        throw;
      }
    } catch (py::error_already_set& e) {
      if (timed_out && e.matches(PyExc_TimeoutError)) {
        std::ostringstream seconds;
        seconds << limit->count();
        fail(name_, shown + " did not return within " + seconds.str() + " s (the policy's call_timeout_s)");
      }
      fail_python(name_, e);
    }
  }

  std::string name_;
  SharedObject instance_;
  ScheduleSpace space_;
  std::set<std::string> seen_;
  std::set<std::string> pending_keys_;
  bool pending_ = false;
  std::size_t trials_ = 0;
};

// make(space, workload_json, target_json, seed) -> policy instance (space: a Space), under the GIL.
void register_strategy(const std::string& name, int priority, py::object make, py::object can_apply) {
  search::StrategyEntry entry;
  entry.name = name;
  entry.priority = priority;
  const SharedObject maker = share(std::move(make));
  // A Python policy takes no strategy_config: make_strategy refuses one (no check_config).
  entry.make = [name, maker](const ScheduleSpace& space, const search::TuneContext& o, const Json&) {
    py::gil_scoped_acquire gil;
    try {
      const bool has_workload = !o.workload.op().empty();
      std::optional<Schedule> fallback;
      std::string backend_name;
      if (has_workload) {
        const backend::Backend& b = backend::backend_for(o.workload, o.target);
        backend_name = b.name();
        fallback = b.default_schedule(o.workload, o.target);
      }
      py::object instance =
          (*maker)(Space(space, backend_name, fallback), dump(has_workload ? o.workload.to_json() : Json()),
                   dump(o.target.to_json()), o.seed);
      return std::unique_ptr<search::SearchStrategy>(new PyStrategy(name, share(std::move(instance)), space));
    } catch (py::error_already_set& e) {
      fail_python(name, e);
    }
  };
  if (!can_apply.is_none()) {
    const SharedObject check = share(std::move(can_apply));
    entry.can_apply = [name, check](const Workload& w, const Target& t) {
      py::gil_scoped_acquire gil;
      try {
        return (*check)(dump(w.to_json()), dump(t.to_json())).cast<bool>();
      } catch (py::error_already_set& e) {
        fail_python(name, e);
      }
    };
  }
  search::register_strategy(std::move(entry));
}

// A strategy driven without measuring, for bench/python_strategy_bench.py: propose(batch),
// update with synthetic ok results, until `proposals` schedules were proposed or the space
// ran out. Returns (proposed, seconds); the same loop for C++ and Python strategies.
py::tuple drive_strategy(const std::string& name, const std::string& workload, const std::string& target,
                         std::size_t proposals, std::size_t batch, std::uint64_t seed) {
  search::TuneContext o;
  o.workload = Workload::from_json(parse(workload, "workload"));
  o.target = backend::load_target(target);
  o.seed = seed;
  const ScheduleSpace space = backend::space_for(o.workload, o.target);
  std::size_t made = 0;
  double seconds = 0;
  {
    py::gil_scoped_release release;  // taken back before the tuple is built
    auto strategy = search::make_strategy(name, space, o);
    const auto start = std::chrono::steady_clock::now();
    while (made < proposals) {
      const std::vector<Schedule> b = strategy->propose(batch);
      if (b.empty()) break;
      std::vector<search::Trial> results;
      for (const auto& s : b) results.push_back({s, Status::ok, 1.0 + double(fnv1a64(s.key()) % 1000)});
      strategy->update(results);
      made += b.size();
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return py::make_tuple(made, seconds);
}

py::list registered() {
  py::list out;
  for (const auto& e : search::registered_strategies()) {
    if (!e.built_in) out.append(py::make_tuple(e.name, e.priority));
  }
  return out;
}

}  // namespace

void bind_strategies(py::module_& m) {
  py::register_exception<StrategyFailure>(m, "StrategyError", PyExc_RuntimeError);
  m.def("register_strategy", &register_strategy, py::arg("name"), py::arg("priority"), py::arg("make"),
        py::arg("can_apply"), "Registers a Python policy factory under name");
  m.def("unregister_strategy", &search::unregister_strategy, py::arg("name"), "Removes a registered strategy");
  m.def("registered_strategies", &registered, "(name, priority) of strategies registered at run time, best first");
  m.def("drive_strategy", &drive_strategy, py::arg("name"), py::arg("workload"), py::arg("target"),
        py::arg("proposals"), py::arg("batch"), py::arg("seed"), "(proposed, seconds) without measuring");
  m.def("strategy_names", &search::strategy_names, "Every strategy name make_strategy accepts");
  m.def("built_in_strategy_names", &search::built_in_strategy_names, "The built-in strategy names");
  // At exit, drop the Python factories while the interpreter still runs.
  m.add_object("_cleanup", py::cpp_function([] {
                 for (const auto& e : search::registered_strategies()) {
                   if (!e.built_in) search::unregister_strategy(e.name);
                 }
               }));
  py::module_::import("atexit").attr("register")(m.attr("_cleanup"));
}

}  // namespace atvoss::python
