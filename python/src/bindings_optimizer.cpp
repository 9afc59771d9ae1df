// Ask/tell over a user's own parameter space (atvoss.Optimizer, python/atvoss/optimizer.py):
// the Python layer maps each parameter's values to integers (the values themselves when all
// are ints, else their indices) and evaluates the user's constraints; this side holds the
// ScheduleSpace and drives any atvoss strategy by its propose/update contract
// (search/search_strategy.hpp). The user's objective stands in for a backend: ask() is
// propose, tell() is update. A space with constraints arrives as the flat indices of its
// valid points (mixed radix, first parameter most significant), so checking a schedule
// needs no call back into Python.
// The model-guided strategy featurises the space as a measured table does: generic knob
// slots only (costmodel/features.cpp). The workload is {"op": "objective", "name": <name>}
// on this machine's host target; with a database, every told result is stored under them
// and a new Optimizer of the same name observes the stored ones first (resume, export and
// warm start as for a built-in op).
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_set>

#include "backend/targets.hpp"
#include "bindings.hpp"
#include "core/error.hpp"
#include "core/measurement.hpp"
#include "db/tuning_database.hpp"
#include "search/search_strategy.hpp"

namespace atvoss::python {
namespace {

class Optimizer {
 public:
  // knobs: [(name, [int values])] in the user's order; valid: flat indices of the points
  // the constraints allow, or none when every point is valid.
  using Told = std::tuple<std::map<std::string, std::int64_t>, std::string, double>;

  Optimizer(const std::string& name, const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& knobs,
            std::optional<std::vector<std::uint64_t>> valid, const std::string& strategy, std::uint64_t seed,
            const std::string& db_path, const std::string& strategy_config)
      : workload_(Workload::from_json(Json{{"op", "objective"}, {"name", name}})),
        target_(backend::load_target("host")) {
    std::vector<Knob> list;
    for (const auto& [knob, values] : knobs) {
      if (values.empty()) throw_bad_input("space: parameter '" + knob + "' has no values");
      list.push_back(Knob{knob, values});
    }
    if (list.empty()) throw_bad_input("space: give at least one parameter");
    ScheduleSpace::Check check;
    if (valid) {
      if (valid->empty()) throw_bad_input("constraints: no point of the space satisfies them");
      auto allowed = std::make_shared<std::unordered_set<std::uint64_t>>(valid->begin(), valid->end());
      // The same knobs without the check: their flat index is what Python enumerated.
      check = [allowed, plain = ScheduleSpace(list, {})](const Schedule& s) {
        const auto p = plain.point_of(s);
        return p && allowed->count(plain.flat_index(*p)) ? Verdict::valid()
                                                         : Verdict::invalid("excluded by the constraints");
      };
    }
    space_ = ScheduleSpace(std::move(list), std::move(check));
    search::TuneContext o;
    o.seed = seed;
    o.workload = workload_;
    o.target = target_;
    o.model_threads = 1;
    strategy_ = search::make_strategy(strategy, space_, o, parse_json(strategy_config, "strategy_config"));
    if (!db_path.empty()) resume(db_path);
  }

  // The stored trials this Optimizer started from, in id order.
  const std::vector<Told>& resumed() const { return resumed_; }

  // Up to n new schedules as {name: int}; fewer (or none) when the space is exhausted.
  std::vector<std::map<std::string, std::int64_t>> ask(std::size_t n) {
    if (n == 0) throw_bad_input("ask: n must be at least 1");
    if (pending_) throw_bad_input("ask: tell the results of the last ask first");
    std::vector<std::map<std::string, std::int64_t>> out;
    const std::vector<Schedule> batch = strategy_->propose(n);
    for (const Schedule& s : batch) out.push_back(s.values());
    if (batch.empty()) strategy_->update({});  // exhausted: nothing to wait for
    pending_ = !out.empty();
    return out;
  }

  // Results of the last ask: (schedule, status, time); status "ok" or a candidate error.
  // messages: the error text of each failed result ("" for a success).
  void tell(const std::vector<Told>& results, const std::vector<std::string>& messages) {
    if (!pending_) throw_bad_input("tell: no pending ask; call ask() first");
    std::vector<search::Trial> trials;
    std::vector<db::Record> records;
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& [values, status, time_us] = results[i];
      search::Trial t{Schedule(values), parse_status(status), time_us};
      if (t.status == Status::ok && !(time_us > 0 && std::isfinite(time_us))) {
        throw_bad_input("tell: a result must be a positive finite number, got " + std::to_string(time_us));
      }
      if (db_) records.push_back(record_of(t, i < messages.size() ? messages[i] : ""));
      trials.push_back(std::move(t));
    }
    // Stored first: a failed write leaves the strategy waiting for the same batch.
    if (db_) db_->records().insert(records);
    strategy_->update(trials);
    pending_ = false;
  }

  bool pending() const { return pending_; }
  std::uint64_t size() const { return space_.size(); }

 private:
  void resume(const std::string& path) {
    db_ = std::make_unique<db::TuningDatabase>(db::TuningDatabase::open(path));
    std::vector<search::Trial> known;
    for (const db::Record& r : db_->records().history(workload_.key(), db::TargetInfo::from_target(target_).key)) {
      if (!space_.point_of(r.schedule)) continue;  // the space changed since: not this one's
      known.push_back({r.schedule, r.measurement.status, r.measurement.time_us});
      resumed_.emplace_back(r.schedule.values(), std::string(to_string(r.measurement.status)), r.measurement.time_us);
    }
    strategy_->observe(known);
  }

  db::Record record_of(const search::Trial& t, const std::string& message) const {
    Measurement m = t.status == Status::ok ? Measurement{} : Measurement::failed(t.status, message);
    if (t.status == Status::ok) {
      m.time_us = t.time_us;
      m.repeats = {t.time_us};
    }
    db::Record r(workload_, target_, t.schedule, m);
    r.worker = "python";
    return r;
  }

  Workload workload_;
  Target target_;
  std::unique_ptr<db::TuningDatabase> db_;
  std::vector<Told> resumed_;
  ScheduleSpace space_;
  std::unique_ptr<search::SearchStrategy> strategy_;
  bool pending_ = false;
};

}  // namespace

void bind_optimizer(py::module_& m) {
  py::class_<Optimizer>(m, "OptimizerCore")
      .def(py::init<const std::string&, const std::vector<std::pair<std::string, std::vector<std::int64_t>>>&,
                    std::optional<std::vector<std::uint64_t>>, const std::string&, std::uint64_t, const std::string&,
                    const std::string&>(),
           py::arg("name"), py::arg("knobs"), py::arg("valid"), py::arg("strategy"), py::arg("seed"), py::arg("db"),
           py::arg("strategy_config"))
      .def("ask", &Optimizer::ask, py::arg("n"), py::call_guard<py::gil_scoped_release>())
      .def("tell", &Optimizer::tell, py::arg("results"), py::arg("messages"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("resumed", &Optimizer::resumed)
      .def_property_readonly("pending", &Optimizer::pending)
      .def_property_readonly("size", &Optimizer::size);
}

}  // namespace atvoss::python
