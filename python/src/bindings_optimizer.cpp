// Ask/tell over a user's own parameter space (atvoss.Optimizer, python/atvoss/optimizer.py):
// the Python layer maps each parameter's values to integers (the values themselves when all
// are ints, else a stable id per value) and each objective value to a positive cost; this
// side holds the ScheduleSpace and drives any atvoss strategy by its propose/update contract
// (search/search_strategy.hpp). The user's objective stands in for a backend.
// A space with constraints arrives as the flat indices of its valid points (mixed radix,
// first parameter most significant), so checking a schedule needs no call back into Python.
// The model-guided strategy featurises the space as a measured table does: generic knob
// slots only (costmodel/features.cpp). The workload is {"op": "objective", "name": <name>}
// on this machine's host target.
//
// Several asks may be pending at once (docs/python.md, "Parallel workers"): the strategy
// holds one batch at a time, so a new ask closes the strategy's batch with no results and
// a result told for a schedule outside it reaches the strategy through observe(). With a
// database, every told result is stored; sync() observes the results other processes (or
// earlier runs) stored, and ask() claims each schedule it hands out in the database
// (db::RecordStore::claim), skipping those another owner holds, so workers sharing one
// database measure each point once.
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <unordered_set>

#include "backend/targets.hpp"
#include "bindings.hpp"
#include "core/constraint.hpp"
#include "core/error.hpp"
#include "core/measurement.hpp"
#include "db/record_follower.hpp"
#include "db/tuning_database.hpp"
#include "search/search_strategy.hpp"

namespace atvoss::python {
namespace {

using Values = std::map<std::string, std::int64_t>;

// How long a handed-out schedule stays claimed for this owner; every ask renews the claims
// on what is still outstanding.
constexpr std::int64_t kClaimTtlMs = 120000;
// Proposals one ask makes at most while other workers hold what the strategy proposes.
constexpr int kProposalRounds = 4;

ScheduleSpace make_space(const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& knobs,
                         const std::optional<std::vector<std::uint64_t>>& valid) {
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
  return ScheduleSpace(std::move(list), std::move(check));
}

class Optimizer {
 public:
  // A result: (schedule, status, cost); status "ok" or a candidate error.
  using Told = std::tuple<Values, std::string, double>;
  // A stored result: the same and its error message.
  using Stored = std::tuple<Values, std::string, double, std::string>;

  // knobs: [(name, [int values])] in the user's order; valid: flat indices of the points
  // the constraints allow, or none when every point is valid. owner names this optimizer's
  // claims in the database (unique per process and object).
  // priors: other tables' results as (name, [(schedule, status, cost)]), TuneContext::prior_spaces.
  Optimizer(const std::string& name, const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& knobs,
            const std::optional<std::vector<std::uint64_t>>& valid, const std::string& strategy, std::uint64_t seed,
            const std::string& db_path, const std::string& strategy_config, std::string owner,
            const std::vector<std::pair<std::string, std::vector<Told>>>& priors)
      : workload_(Workload::from_json(Json{{"op", "objective"}, {"name", name}})),
        target_(backend::load_target("host")),
        target_info_(db::TargetInfo::from_target(target_)),
        owner_(std::move(owner)),
        space_(make_space(knobs, valid)) {
    search::TuneContext o;
    o.seed = seed;
    o.workload = workload_;
    o.target = target_;
    o.model_threads = 1;
    for (const auto& [table, results] : priors) {
      std::vector<search::Trial> trials;
      for (const auto& r : results) trials.push_back(trial_of(r, "priors"));
      o.prior_spaces.push_back(search::prior_space_from_trials(table, std::move(trials)));
    }
    strategy_ = search::make_strategy(strategy, space_, o, parse(strategy_config, "strategy_config"));
    if (!db_path.empty()) {
      db_ = std::make_unique<db::TuningDatabase>(db::TuningDatabase::open(db_path));
      // Claims lapse on their own, so losing the last ones to a power cut costs nothing:
      // their own connection skips the fsync a result's commit makes (one per ask).
      db::OpenOptions no_sync;
      no_sync.sync_every_commit = false;
      claims_ = std::make_unique<db::TuningDatabase>(db::TuningDatabase::open(db_path, no_sync));
      follower_ = std::make_unique<db::RecordFollower>(db_->records(), workload_.key(), target_info_.key);
    }
  }

  ~Optimizer() {
    try {
      release();
    } catch (...) {  // the claims lapse on their own
    }
  }

  // Drops this optimizer's claims: what it still has outstanding is free for others.
  void release() {
    if (claims_) claims_->records().release(owner_);
  }
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // The database's results this optimizer does not know yet, in id order, each in the space
  // observed by the strategy. Those outside the space are counted (outside()), not returned.
  // Reads only what is new since the last sync (db/record_follower.hpp).
  std::vector<Stored> sync() {
    std::vector<Stored> out;
    if (!db_) return out;
    const std::vector<db::Record> records = follower_->next();
    std::vector<search::Trial> known;
    for (const db::Record& r : records) {
      if (!space_.point_of(r.schedule)) {
        outside_.insert(r.schedule.key());
        continue;
      }
      const std::string key = r.schedule.key();
      if (known_.count(key) || outstanding_.count(key)) continue;
      known_.insert(key);
      known.push_back({r.schedule, r.measurement.status, r.measurement.time_us});
      out.emplace_back(r.schedule.values(), std::string(to_string(r.measurement.status)), r.measurement.time_us,
                       r.measurement.message);
    }
    if (!known.empty()) {
      close_batch();
      strategy_->observe(known);
    }
    return out;
  }

  // Up to n new schedules as {name: int}, none of them outstanding, known or claimed by
  // another owner; fewer (or none) when the space has no more free points.
  std::vector<Values> ask(std::size_t n) {
    if (n == 0) throw_bad_input("ask: n must be at least 1");
    renew_claims();
    std::vector<Values> out;
    held_elsewhere_.clear();
    // Workers sharing a database read the same results, so their strategies tend to propose
    // the same points: those another worker holds are skipped and the strategy asked for
    // more, a few rounds at most, rather than leaving this worker idle.
    for (int round = 0; round < kProposalRounds && out.size() < n; ++round) {
      close_batch();
      std::vector<Schedule> batch = strategy_->propose(n - out.size() + outstanding_.size() + held_elsewhere_.size());
      batch_pending_ = true;
      std::erase_if(batch, [&](const Schedule& s) {
        const std::string key = s.key();
        return outstanding_.count(key) || known_.count(key) || held_elsewhere_.count(key);
      });
      if (batch.empty()) break;  // the space has no free point left
      take_claimed(batch, n, out);
    }
    return out;
  }

  // A told or observed result as a trial; bad_input (naming `who`) for a success whose cost is
  // no positive finite number.
  static search::Trial trial_of(const Told& result, const char* who) {
    const auto& [values, status, cost] = result;
    search::Trial t{Schedule(values), parse_status(status), cost};
    if (t.status == Status::ok && !(cost > 0 && std::isfinite(cost))) {
      throw_bad_input(std::string(who) + ": a cost must be a positive finite number, got " + std::to_string(cost));
    }
    return t;
  }

  // Results of outstanding schedules (any subset, any order, each once); messages: the
  // error text of each failed result ("" for a success). Stored first, so a failed write
  // leaves every one of them outstanding.
  void tell(const std::vector<Told>& results, const std::vector<std::string>& messages) {
    std::vector<search::Trial> in_batch, elsewhere;
    std::vector<db::Record> records;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < results.size(); ++i) {
      search::Trial t = trial_of(results[i], "tell");
      const std::string key = t.schedule.key();
      if (!outstanding_.count(key)) throw_bad_input("tell: " + key + " is not an outstanding ask");
      if (!seen.insert(key).second) throw_bad_input("tell: " + key + " is told twice");
      if (db_) records.push_back(record_of(t, i < messages.size() ? messages[i] : ""));
      (batch_keys_.count(key) ? in_batch : elsewhere).push_back(std::move(t));
    }
    if (db_) db_->records().insert(records);
    for (const std::string& key : seen) {
      outstanding_.erase(key);
      known_.insert(key);
    }
    if (batch_pending_ && !in_batch.empty()) {
      strategy_->update(in_batch);
      batch_pending_ = false;
      batch_keys_.clear();
    }
    if (!elsewhere.empty()) {
      close_batch();
      strategy_->observe(elsewhere);
    }
  }

  // Results measured elsewhere (another sampler's trials in an Optuna study, say): each new
  // one becomes known and reaches the strategy through observe(), so it is never proposed
  // and informs the search. Those already known or outstanding are skipped (their result
  // is, or will be, told). Returns how many were new.
  std::size_t observe(const std::vector<Told>& results, const std::vector<std::string>& messages) {
    std::vector<search::Trial> fresh;
    std::vector<db::Record> records;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < results.size(); ++i) {
      search::Trial t = trial_of(results[i], "observe");
      const std::string key = t.schedule.key();
      if (!space_.point_of(t.schedule)) throw_bad_input("observe: " + key + " is not a point of the space");
      if (known_.count(key) || outstanding_.count(key) || !seen.insert(key).second) continue;
      if (db_) records.push_back(record_of(t, i < messages.size() ? messages[i] : ""));
      fresh.push_back(std::move(t));
    }
    if (db_) db_->records().insert(records);
    known_.insert(seen.begin(), seen.end());
    if (!fresh.empty()) {
      close_batch();
      strategy_->observe(fresh);
    }
    return fresh.size();
  }

  std::size_t outstanding() const { return outstanding_.size(); }
  // Schedules the last ask skipped because another owner holds their claim.
  std::size_t held_elsewhere() const { return held_elsewhere_.size(); }
  // Stored results of this objective outside the space, at the last sync().
  std::size_t outside() const { return outside_.size(); }
  std::uint64_t size() const { return space_.size(); }

 private:
  // Claims schedules of batch, a few at a time and only as many as still wanted (a claim
  // taken and not handed out would keep every other worker off that schedule until it
  // lapses), and hands out those it holds; the others are held elsewhere.
  void take_claimed(const std::vector<Schedule>& batch, std::size_t n, std::vector<Values>& out) {
    for (std::size_t next = 0; out.size() < n && next < batch.size();) {
      const std::size_t take = std::min(n - out.size(), batch.size() - next);
      const std::vector<Schedule> chunk(batch.begin() + static_cast<std::ptrdiff_t>(next),
                                        batch.begin() + static_cast<std::ptrdiff_t>(next + take));
      next += take;
      const std::vector<bool> mine = claim(chunk);
      for (std::size_t i = 0; i < chunk.size(); ++i) {
        const std::string key = chunk[i].key();
        if (!mine[i]) {
          held_elsewhere_.insert(key);
          continue;
        }
        outstanding_.emplace(key, chunk[i]);
        batch_keys_.insert(key);
        out.push_back(chunk[i].values());
      }
    }
  }

  // Ends the strategy's pending batch; a schedule of it still outstanding is told later
  // through observe() (search_strategy.hpp: a schedule left out may be proposed again, and
  // ask() skips outstanding ones).
  void close_batch() {
    if (!batch_pending_) return;
    strategy_->update({});
    batch_pending_ = false;
    batch_keys_.clear();
  }

  std::vector<bool> claim(const std::vector<Schedule>& batch) {
    if (!db_ || batch.empty()) return std::vector<bool>(batch.size(), true);
    std::vector<std::string> keys;
    for (const Schedule& s : batch) keys.push_back(s.key());
    std::vector<bool> held = claims_->records().claim(workload_, target_info_, keys, owner_, kClaimTtlMs);
    // A claim is free again once its record is in: only a look-up after the claim is sure.
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (held[i] && db_->records().contains(workload_.key(), target_info_.key, keys[i])) held[i] = false;
    }
    return held;
  }

  void renew_claims() {
    if (!db_ || outstanding_.empty()) return;
    std::vector<Schedule> mine;
    for (const auto& [key, s] : outstanding_) mine.push_back(s);
    claim(mine);
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
  db::TargetInfo target_info_;
  std::string owner_;
  std::unique_ptr<db::TuningDatabase> db_;
  std::unique_ptr<db::TuningDatabase> claims_;  // the same database: claims only
  ScheduleSpace space_;
  std::unique_ptr<search::SearchStrategy> strategy_;
  bool batch_pending_ = false;
  std::set<std::string> batch_keys_;                // outstanding schedules of the strategy's batch
  std::map<std::string, Schedule> outstanding_;     // asked, not yet told
  std::unordered_set<std::string> known_;           // told, or read back from the database
  std::unordered_set<std::string> held_elsewhere_;  // claimed by another owner at the last ask
  std::unordered_set<std::string> outside_;         // stored schedules outside the space
  std::unique_ptr<db::RecordFollower> follower_;    // db_'s records of this objective, for sync()
};

// The study record of an objective in a database: job "objective:<name>", whose spec holds
// how the Python layer encodes the space (python/atvoss/optimizer.py). Returns the stored
// spec, creating it from `spec` when there is none (two processes creating one at once
// both get the one that landed).
std::string open_study(const std::string& db_path, const std::string& name, const std::string& spec) {
  db::TuningDatabase db = db::TuningDatabase::open(db_path);
  const std::string job = "objective:" + name;
  if (auto row = db.jobs().named(job)) return dump(row->spec);
  try {
    db.jobs().create(job, parse(spec, "study"));
    db.jobs().update(db.jobs().named(job)->id, "study", 0);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::bad_input) throw;  // created by another process meanwhile
  }
  return dump(db.jobs().named(job)->spec);
}

void update_study(const std::string& db_path, const std::string& name, const std::string& spec) {
  db::TuningDatabase db = db::TuningDatabase::open(db_path);
  const auto row = db.jobs().named("objective:" + name);
  if (!row) throw Error(ErrorKind::not_found, "no study named '" + name + "'");
  db.jobs().update_spec(row->id, parse(spec, "study"));
}

}  // namespace

void bind_optimizer(py::module_& m) {
  py::class_<Optimizer>(m, "OptimizerCore")
      .def(py::init<const std::string&, const std::vector<std::pair<std::string, std::vector<std::int64_t>>>&,
                    const std::optional<std::vector<std::uint64_t>>&, const std::string&, std::uint64_t,
                    const std::string&, const std::string&, std::string,
                    const std::vector<std::pair<std::string, std::vector<Optimizer::Told>>>&>(),
           py::arg("name"), py::arg("knobs"), py::arg("valid"), py::arg("strategy"), py::arg("seed"), py::arg("db"),
           py::arg("strategy_config"), py::arg("owner"), py::arg("priors"))
      .def("sync", &Optimizer::sync, py::call_guard<py::gil_scoped_release>())
      .def("ask", &Optimizer::ask, py::arg("n"), py::call_guard<py::gil_scoped_release>())
      .def("tell", &Optimizer::tell, py::arg("results"), py::arg("messages"), py::call_guard<py::gil_scoped_release>())
      .def("observe", &Optimizer::observe, py::arg("results"), py::arg("messages"),
           py::call_guard<py::gil_scoped_release>())
      .def("release", &Optimizer::release, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("outstanding", &Optimizer::outstanding)
      .def_property_readonly("held_elsewhere", &Optimizer::held_elsewhere)
      .def_property_readonly("outside", &Optimizer::outside)
      .def_property_readonly("size", &Optimizer::size);
  m.def(
      "constraint_points",
      [](const std::vector<std::string>& constraints, const std::vector<std::string>& names,
         const std::vector<std::vector<ConstraintValue>>& values,
         std::uint64_t max_points) { return points_satisfying(constraints, names, values, max_points); },
      py::arg("constraints"), py::arg("names"), py::arg("values"), py::arg("max_points"),
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "check_constraint",
      [](const std::string& text, const std::vector<std::string>& names) { Constraint::parse(text, names); },
      py::arg("text"), py::arg("names"));
  m.def("open_study", &open_study, py::arg("db"), py::arg("name"), py::arg("spec"),
        py::call_guard<py::gil_scoped_release>());
  m.def("update_study", &update_study, py::arg("db"), py::arg("name"), py::arg("spec"),
        py::call_guard<py::gil_scoped_release>());
}

}  // namespace atvoss::python
