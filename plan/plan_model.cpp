// Map: plan_model() = per task, candidates timed noise-free -> layouts over the fastest per
// layout -> each task's fastest in its layout (the default among them) -> variants with
// transposes and fallbacks -> graph run -> the model-level check -> the ModelPlan.
#include "plan/plan_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/user_paths.hpp"
#include "db/tuning_database.hpp"
#include "execution/scheduler.hpp"
#include "frontend/fallback.hpp"
#include "host/digest.hpp"
#include "lowering/knob_names.hpp"
#include "plan/graph_run.hpp"
#include "plan/layout_choice.hpp"
#include "tuner/job_context.hpp"

namespace atvoss::plan {
namespace {

// Stored schedules re-timed per task: the fastest few, since one measured a little fast by
// noise may not be the fastest noise-free.
constexpr std::size_t kTopStored = 3;
// Measurements per candidate on real hardware (the host), their median taken.
constexpr int kRealRepeats = 5;

struct Candidate {
  Schedule schedule;
  double time_us = 0;
  std::string provenance;
  std::optional<Layout> layout;
};

std::string us_text(double us) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3f us", us);
  return text;
}

class Planner {
 public:
  Planner(const tuner::TunedModel& tuned, const std::vector<std::vector<db::Record>>& histories)
      : tuned_(tuned),
        target_(tuned.target),
        tasks_(tuned.tasks),
        histories_(histories),
        device_(model_device(tuned.target)) {}

  PlannedModel plan() {
    PlannedModel out;
    const TransposeCost transpose_cost = swept_transpose_cost(target_);
    std::vector<std::vector<Candidate>> candidates;
    for (std::size_t i = 0; i < tasks_.tasks().size(); ++i) candidates.push_back(candidates_of(i));
    out.layout_times = layout_times(candidates);
    const LayoutChoice layouts = choose_layouts(tasks_, out.layout_times, transpose_cost);
    out.vendor_default = default_variant(candidates, transpose_cost);
    out.chosen = chosen_variant(candidates, layouts, transpose_cost);
    if (!tasks_.graph().empty()) out.chosen = mixed_variant(out.vendor_default, out.chosen, transpose_cost);
    out.run = graph_run(tasks_, out.vendor_default, out.chosen, target_, tuned_.memory);
    double figure = figure_of(out.chosen, out.run);
    const double default_figure = out.run ? out.run->default_scheduled_us : out.vendor_default.end_to_end_us();
    std::string model_check;
    if (figure > default_figure) {  // side by side, the tasks' winners lose: keep the defaults
      model_check = "the tuned schedules came to " + us_text(figure) + ", above the vendor default's " +
                    us_text(default_figure) + ": the plan runs the vendor defaults";
      out.chosen = out.vendor_default;
      for (auto& op : out.chosen.ops) op.note = "the model-level check kept the default";
      out.run = graph_run(tasks_, out.vendor_default, out.chosen, target_, tuned_.memory);
      figure = figure_of(out.chosen, out.run);
      for (auto& c : candidates) c.erase(c.begin() + 1, c.end());  // the default is first
    }
    out.chosen.name = "(d) the plan";
    out.plan = model_plan(out, candidates, figure, default_figure);
    out.plan.model_check = model_check;
    return out;
  }

 private:
  // A candidate's noise-free time (on real hardware, the median of kRealRepeats measurements:
  // one is as far as 10 % from the next, as far as many candidates are from the default),
  // timed as the model runs it (a CPU kernel's threads awake between calls, as the engine's
  // are: timed alone, a two-thread default paid a wake-up per call and lost to its one-thread
  // copy, which then ran at half its speed in Inception v3's blocks); nullopt when it is not
  // valid here.
  // The time of s on w, or nullopt with why (the measurement's message) in *why.
  std::optional<double> time_of(const Workload& w, const Schedule& s, std::string* why = nullptr) const {
    const bool real = backend::traits_for(w, target_).noisy;
    backend::MeasureOptions in_model;
    in_model.noise = 0;
    in_model.as_in_a_model = true;
    const Measurement m = real ? backend::measure_one(backend::MeasureRequest{w, target_, s, kRealRepeats, 0}, in_model)
                               : backend::measure_noise_free(target_, w, s);
    if (!m.ok() && why) *why = m.message;
    return m.ok() ? std::optional<double>(m.time_us) : std::nullopt;
  }

  // Whether w's space on this target has the layout knob (the host's conv space has not).
  bool tunes_layout(const Workload& w) const {
    if (!lowering::has_layout_knob(w)) return false;
    const auto knobs = backend::space_for(w, target_).knobs();
    return std::any_of(knobs.begin(), knobs.end(), [](const Knob& k) { return k.name == knobs::layout; });
  }

  // Task i's candidates, each valid and timed; the default first.
  std::vector<Candidate> candidates_of(std::size_t i) const {
    const Workload& w = tasks_.tasks()[i].workload;
    const bool layouts = tunes_layout(w);
    std::vector<std::pair<Schedule, std::string>> proposed;
    const Schedule def = backend::required_default(w, target_);
    proposed.emplace_back(def, kDefault);
    for (const Schedule& s : default_on_more_threads(w, def)) proposed.emplace_back(s, kDefault);
    for (const Schedule& s : stored_candidates(w, histories_[i], def, layouts)) proposed.emplace_back(s, kMeasured);
    if (tuned_.results[i].pick) proposed.emplace_back(*tuned_.results[i].pick, kZeroShot);
    std::vector<Candidate> out;
    std::set<std::string> seen;
    std::string why_not_default;
    for (const auto& [s, provenance] : proposed) {
      if (!seen.insert(s.key()).second) continue;
      const auto us = time_of(w, s, out.empty() && provenance == kDefault ? &why_not_default : nullptr);
      if (!us) continue;
      out.push_back({s, *us, provenance, layouts ? lowering::layout_of(w, s) : std::nullopt});
    }
    if (out.empty() || out.front().provenance != kDefault) {
      throw Error(ErrorKind::internal, "plan: the vendor default of task '" + tasks_.tasks()[i].name +
                                           "' is not valid on " + target_.name + ": " + why_not_default);
    }
    return out;
  }

  // The default on each other thread count its space offers (a CPU's default runs one thread,
  // as a kernel measured alone; a model runs on every core): still the vendor default.
  std::vector<Schedule> default_on_more_threads(const Workload& w, const Schedule& def) const {
    const std::string threads(knobs::threads);
    std::vector<Schedule> out;
    if (!def.has(threads)) return out;
    const ScheduleSpace space = backend::space_for(w, target_);
    for (const auto& k : space.knobs()) {
      if (k.name != threads) continue;
      for (std::int64_t v : k.values) {
        if (v == def.at(threads)) continue;
        const Schedule s = backend::default_on_threads(w, target_, def, v);
        if (space.check(s).ok) out.push_back(s);
      }
    }
    return out;
  }

  // The stored schedules worth timing again: the fastest few; the fastest in each layout; the
  // fastest at the default's fusion level and the overall winner moved to that level (the
  // search spends few trials at any one level).
  static std::vector<Schedule> stored_candidates(const Workload& w, const std::vector<db::Record>& history,
                                                 const Schedule& def, bool layouts) {
    std::vector<const db::Record*> ok;
    for (const auto& r : history) {
      if (r.measurement.ok()) ok.push_back(&r);
    }
    std::stable_sort(ok.begin(), ok.end(), [](const db::Record* a, const db::Record* b) {
      return a->measurement.time_us < b->measurement.time_us;
    });
    std::vector<Schedule> out;
    for (std::size_t k = 0; k < ok.size() && k < kTopStored; ++k) out.push_back(ok[k]->schedule);
    std::set<int> layouts_seen;
    const std::int64_t level = def.get_or("fusion_level", 0);
    bool at_level = false;
    for (const db::Record* r : ok) {
      if (layouts && layouts_seen.insert(int(*lowering::layout_of(w, r->schedule))).second) out.push_back(r->schedule);
      if (!at_level && r->schedule.get_or("fusion_level", 0) == level) {
        at_level = true;
        out.push_back(r->schedule);
      }
    }
    if (!ok.empty() && ok.front()->schedule.has("fusion_level")) {
      Schedule moved = ok.front()->schedule;
      moved.set("fusion_level", level);
      out.push_back(moved);
    }
    return out;
  }

  // Per task, the fastest candidate's time in each layout (tasks with the knob only).
  std::vector<std::map<Layout, double>> layout_times(const std::vector<std::vector<Candidate>>& candidates) const {
    std::vector<std::map<Layout, double>> times(candidates.size());
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      for (const auto& c : candidates[i]) {
        if (!c.layout) continue;
        auto [it, fresh] = times[i].emplace(*c.layout, c.time_us);
        if (!fresh) it->second = std::min(it->second, c.time_us);
      }
    }
    return times;
  }

  // Every task's default (the first candidate of each).
  ModelVariant default_variant(const std::vector<std::vector<Candidate>>& candidates, const TransposeCost& cost) const {
    ModelVariant v{"(a) vendor default", "the backend's default schedule for every op", {}};
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const frontend::TuneTask& t = tasks_.tasks()[i];
      const Candidate& def = candidates[i].front();
      v.ops.push_back({t.name, t.weight, timed(def.time_us), "", def.schedule, kDefault});
    }
    finish_variant(v, cost);
    return v;
  }

  // Each task's fastest candidate in its chosen layout.
  ModelVariant chosen_variant(const std::vector<std::vector<Candidate>>& candidates, const LayoutChoice& layouts,
                              const TransposeCost& cost) const {
    ModelVariant v{"(d) the plan",
                   "each task's fastest candidate, timed noise-free, in the layout the plan chose; never slower "
                   "than the vendor default",
                   {}};
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const frontend::TuneTask& t = tasks_.tasks()[i];
      const Candidate& c = *fastest(candidates[i], layouts.layouts[i]);
      v.ops.push_back({t.name, t.weight, timed(c.time_us), check_note(candidates[i], c), c.schedule, c.provenance});
    }
    finish_variant(v, cost);
    return v;
  }

  // v's graph run under the default graph knobs (graph_run tunes them for the variant kept),
  // plus the transposes no node runs: what mixed_variant compares.
  double quick_figure(const ModelVariant& v) const {
    return execution::simulate(exec_graph_of(tasks_, v, target_), device_).makespan_us +
           unplaced_transposes_us(tasks_, v);
  }

  // Side by side, a task's fastest kernel alone can slow the run: it may hold cores that a
  // branch beside it needs, or sit off the critical path. From the faster of the two variants,
  // each task where they differ takes the other one's schedule if the run is faster so (one
  // pass in task order). Inception v1 on a sunk graph: every task's winner together ran 199-223
  // us against the defaults' 174-180 us (docs/decisions/launch-mode.md).
  ModelVariant mixed_variant(const ModelVariant& def, const ModelVariant& chosen, const TransposeCost& cost) const {
    const std::size_t n = chosen.ops.size();
    std::vector<bool> differs(n), at_default(n, false);
    for (std::size_t i = 0; i < n; ++i) differs[i] = def.ops[i].schedule->key() != chosen.ops[i].schedule->key();
    // The chosen variant with the tasks of at_default on their default schedule.
    const auto mix = [&](const std::vector<bool>& at) {
      ModelVariant v = chosen;
      for (std::size_t i = 0; i < n; ++i) {
        if (!at[i]) continue;
        v.ops[i] = def.ops[i];
        v.ops[i].note = "the model-level check kept the default: the graph run is faster with it";
      }
      finish_variant(v, cost);
      return v;
    };
    ModelVariant best = mix(at_default);
    double best_us = quick_figure(best);
    ModelVariant defaults = mix(differs);
    if (const double us = quick_figure(defaults); us < best_us) {
      best_us = us;
      best = std::move(defaults);
      at_default = differs;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!differs[i]) continue;
      at_default[i] = !at_default[i];
      ModelVariant trial = mix(at_default);
      if (const double us = quick_figure(trial); us < best_us) {
        best = std::move(trial);
        best_us = us;
      } else {
        at_default[i] = !at_default[i];
      }
    }
    return best;
  }

  static Measurement timed(double us) {
    Measurement m;
    m.status = Status::ok;
    m.time_us = us;
    return m;
  }

  static const Candidate* fastest(const std::vector<Candidate>& cs, std::optional<Layout> layout) {
    const Candidate* best = nullptr;
    for (const auto& c : cs) {
      if (layout && c.layout != layout) continue;
      if (!best || c.time_us < best->time_us) best = &c;
    }
    return best ? best : &cs.front();
  }

  // What the check against the default found, for the task's line.
  static std::string check_note(const std::vector<Candidate>& cs, const Candidate& kept) {
    const Candidate& def = cs.front();
    if (kept.provenance != kDefault) {
      return kept.provenance + " schedule kept: " + us_text(kept.time_us) + " against the default's " +
             us_text(def.time_us);
    }
    const Candidate* other = nullptr;
    for (const auto& c : cs) {
      if (c.provenance != kDefault && (!other || c.time_us < other->time_us)) other = &c;
    }
    const std::string kept_text =
        &kept == &def ? "default kept" : "default kept, on another thread count (" + us_text(kept.time_us) + ")";
    if (!other) return kept_text + ": nothing else valid to run";
    return kept_text + ": the best " + other->provenance + " schedule takes " + us_text(other->time_us) +
           " (in its layout, with its transposes), the default " + us_text(def.time_us);
  }

  void finish_variant(ModelVariant& v, const TransposeCost& cost) const {
    v.layout_changes = variant_transposes(tasks_, v, cost);
    v.fallback_us = frontend::fallbacks_us(tasks_, target_);
  }

  static double figure_of(const ModelVariant& v, const std::optional<GraphRun>& run) {
    return run ? run->scheduled_us : v.end_to_end_us();
  }

  ModelPlan model_plan(const PlannedModel& m, const std::vector<std::vector<Candidate>>& candidates, double figure,
                       double default_figure) const {
    ModelPlan p;
    p.job = tuned_.spec.name;
    p.model = tasks_.model();
    const std::string& file = tuned_.spec.model;
    if (file.size() > 5 && file.compare(file.size() - 5, 5, ".onnx") == 0) {
      p.model_sha256 = host::sha256_hex(read_input_file(file, "model"));
    }
    p.batch = tasks_.batch();
    p.target = target_;
    for (std::size_t i = 0; i < m.chosen.ops.size(); ++i) {
      const VariantOp& op = m.chosen.ops[i];
      const Workload& w = tasks_.tasks()[i].workload;
      const auto layout = tunes_layout(w) ? lowering::layout_of(w, *op.schedule) : std::nullopt;
      p.tasks.push_back({op.task, w, op.weight, *op.schedule, op.measurement->time_us, op.provenance,
                         candidates[i].front().time_us,
                         layout ? std::optional<std::string>(lowering::layout_name(*layout)) : std::nullopt, op.note});
    }
    for (const auto& c : m.chosen.layout_changes) {
      p.transposes.push_back({c.from_layer, c.to_layer, c.from, c.to, Workload::from_json(c.transpose), c.time_us});
    }
    p.fallback_us = m.chosen.fallback_us;
    p.graph = tasks_.graph();
    if (m.run) p.run = planned_run(*m.run);
    p.end_to_end_us = figure;
    p.default_us = default_figure;
    p.meaning = m.run ? "the graph run: every node under the plan's schedules (noise-free; measured again on a real "
                        "machine), transposes in their consumers' nodes, ready-queue scheduled with the plan's "
                        "graph knobs"
                      : "serial: the plan's schedules (noise-free; measured again on a real machine) x their "
                        "occurrences, plus the transposes and the nodes not tuned";
    return p;
  }

  static PlannedRun planned_run(const GraphRun& run) {
    PlannedRun r;
    r.knobs = run.knobs.point;
    for (std::size_t i = 0; i < run.graph.nodes().size(); ++i) {
      const auto& t = run.timeline.runs[i];
      r.nodes.push_back({run.graph.nodes()[i].name, run.graph.nodes()[i].op, t.start_us, t.end_us, t.stream});
    }
    std::stable_sort(r.nodes.begin(), r.nodes.end(),
                     [](const PlannedNode& a, const PlannedNode& b) { return a.start_us < b.start_us; });
    r.memory = run.memory_plan;
    r.default_scheduled_us = run.default_scheduled_us;
    r.unplaced_us = run.unplaced_us;
    return r;
  }

  const tuner::TunedModel& tuned_;
  const Target& target_;
  const frontend::TaskSet& tasks_;
  const std::vector<std::vector<db::Record>>& histories_;
  const execution::Device device_;  // model_device: what quick_figure simulates, once per plan
};

}  // namespace

std::vector<LayoutChangeRow> variant_transposes(const frontend::TaskSet& tasks, const ModelVariant& v,
                                                const TransposeCost& cost) {
  std::vector<std::optional<Layout>> layouts;
  for (std::size_t i = 0; i < tasks.tasks().size(); ++i) {
    const Workload& w = tasks.tasks()[i].workload;
    const bool timed = i < v.ops.size() && v.ops[i].schedule;
    layouts.push_back(timed ? lowering::layout_of(w, *v.ops[i].schedule) : std::nullopt);
  }
  std::vector<LayoutChangeRow> rows;
  for (const auto& c : layout_changes(tasks, layouts, cost)) {
    rows.push_back({c.from_layer, c.to_layer, lowering::layout_name(c.from), lowering::layout_name(c.to),
                    c.transpose.label(), c.time_us, c.transpose.to_json()});
  }
  return rows;
}

std::vector<std::vector<db::Record>> task_histories(const tuner::TunedModel& tuned) {
  const db::TuningDatabase db = db::TuningDatabase::open(tuned.spec.database);
  const std::string key = db::TargetInfo::from_target(tuned.target).key;
  std::vector<std::vector<db::Record>> out;
  for (const auto& t : tuned.tasks.tasks()) out.push_back(db.records().history(t.workload.key(), key));
  return out;
}

PlannedModel plan_model(const tuner::TunedModel& tuned, const std::vector<std::vector<db::Record>>& histories) {
  const tuner::JobScope in_job(tuned.context);  // lower as the job measured: under its fusion rules
  return Planner(tuned, histories).plan();
}

}  // namespace atvoss::plan
