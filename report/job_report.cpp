// Map: report_job() = open the database -> layout times -> layout choice -> variants
// (with transposes and fallbacks) -> per-task detail -> HTML -> summary JSON -> bar.
#include "report/job_report.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "backend/backend.hpp"
#include "core/atomic_file.hpp"
#include "db/tuning_database.hpp"
#include "distributed/topology.hpp"
#include "frontend/fallback.hpp"
#include "frontend/training.hpp"
#include "lowering/knob_names.hpp"
#include "report/fusion_report.hpp"
#include "report/graph_run.hpp"
#include "report/html_report.hpp"
#include "report/layout_choice.hpp"
#include "report/model_evaluation.hpp"
#include "report/parallel_report.hpp"
#include "tuner/job_context.hpp"

namespace atvoss::report {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr const char* kEndToEndMeaning =
    "variant (d): every task's chosen schedule (measured best, else zero-shot pick) re-simulated without "
    "noise (measured again on the host), plus layout transposes and the nodes not tuned";

Json optional_us(double us) { return std::isfinite(us) ? Json(us) : Json(nullptr); }
Json optional_us(const std::optional<Measurement>& m) { return m && m->ok() ? Json(m->time_us) : Json(nullptr); }

class JobReport {
 public:
  explicit JobReport(const tuner::TunedModel& tuned)
      : tuned_(tuned),
        spec_(tuned.spec),
        target_(tuned.target),
        tasks_(tuned.tasks),
        db_(db::TuningDatabase::open(spec_.database)),
        target_key_(db::TargetInfo::from_target(target_).key) {
    for (const auto& t : tasks_.tasks()) histories_.push_back(db_.records().history(t.workload.key(), target_key_));
  }

  JobOutcome build() {
    JobOutcome out;
    out.tasks = static_cast<int>(tasks_.tasks().size());
    out.tasks_tuned = tuned_.tasks_tuned();
    out.trials = tuned_.trials;
    out.resumed_trials = tuned_.resumed_trials;
    out.measured = tuned_.measured;
    const TransposeCost transpose_cost = swept_transpose_cost(target_);
    const auto times = layout_times();
    const LayoutChoice layouts = choose_layouts(tasks_, times, transpose_cost);
    ReportData data;
    data.variants = variants(layouts, transpose_cost);
    // One end-to-end figure: (d), the chosen schedules re-simulated without noise (on the
    // host, measured again), with transposes and fallback nodes; (a) is its baseline.
    const ModelVariant& chosen = data.variants.back();
    out.default_us = data.variants.front().end_to_end_us();
    out.tuned_us = chosen.end_to_end_us();
    out.layout_changes = int(chosen.layout_changes.size());
    for (const auto& c : chosen.layout_changes) out.layout_changes_us += c.time_us;
    out.fallback_us = chosen.fallback_us;
    out.database = spec_.database;
    out.table = spec_.export_path;
    out.report = spec_.report_path;
    out.memory = tuned_.memory;
    describe_job(data, out);
    std::vector<std::optional<Schedule>> chosen_schedules;
    for (const auto& op : chosen.ops) chosen_schedules.push_back(op.schedule);
    data.fusion = fusion_report(tasks_, chosen_schedules, target_);
    Json tasks = Json::array();
    for (std::size_t i = 0; i < tasks_.tasks().size(); ++i) {
      data.tasks.push_back(task_report(i));
      tasks.push_back(task_json(i, data.tasks.back(), chosen.ops[i], data.variants[1].ops[i], layouts, times));
    }
    data.precisions = evaluate_precisions(tuned_.model, tuned_.precision, target_);
    for (const auto& t : tasks_.tasks()) {
      if (const double e = frontend::int8_error_estimate(t.workload); e > 0) data.int8_error.emplace_back(t.name, e);
    }
    data.measured_precision = measure_host_precisions(tasks_, target_, spec_.seed);
    GraphRun run = graph_run(tasks_, data.variants.front(), chosen, target_, tuned_.memory);
    if (!run.summary.is_null()) data.graph = std::move(run.view);
    Json parallel = parallel_section(chosen, data);
    write_report(data, spec_.report_path);
    out.summary = summary_json(out, data, tasks);
    out.summary["execution"] = std::move(run.summary);
    if (!parallel.is_null()) out.summary["parallel"] = std::move(parallel);
    out.memory_plan = std::move(run.plan);
    if (tuned_.progress) tuned_.progress->finish(tuned_.task_lines(), out.trials, out.tuned_us, out.default_us);
    return out;
  }

 private:
  // The job's "parallel" block: the tuned schedules over many devices, its plan file written
  // and its section in the report (parallel_report.hpp). Null without the block.
  Json parallel_section(const ModelVariant& chosen, ReportData& data) const {
    if (!spec_.parallel || tasks_.graph().empty()) return nullptr;
    const tuner::ParallelSpec& p = *spec_.parallel;
    const frontend::TaskSet step = p.mode == "training" ? frontend::training_tasks(tasks_) : tasks_;
    ParallelReportOptions o;
    o.devices = p.devices;
    o.trials = p.trials;
    o.seed = spec_.seed;
    const ParallelReport r = parallel_report(step, tasks_, chosen, target_, distributed::load_topology(p.topology), o);
    write_file_atomically(p.plan_path, "job spec: field 'parallel.plan'",
                          [&](std::ostream& os) { os << r.summary["plan"].dump(2) << "\n"; });
    data.parallel_html = render_parallel_section(r);
    Json out = r.summary;
    out["plan_path"] = p.plan_path;
    return out;
  }

  void describe_job(ReportData& data, const JobOutcome& out) const {
    data.job = spec_.name;
    data.target = target_.name;
    for (const auto& task : tasks_.tasks()) {  // the backends' own word (BackendTraits)
      data.peak_gflops = std::max(data.peak_gflops, backend::traits_for(task.workload, target_).peak_gflops);
    }
    data.model = tasks_.model();
    data.batch = tasks_.batch();
    data.strategy = spec_.strategy;
    data.trials = out.trials;
    data.budget = spec_.trials;
    data.tasks_tuned = out.tasks_tuned;
    for (const auto& n : tasks_.fallbacks()) {
      data.fallbacks.push_back({n.name, n.op, n.reason, n.count, frontend::fallback_us(n, target_)});
    }
    data.device_memory = tuned_.memory.summary();
    data.fits_device = tuned_.memory.fits();
  }

  TaskReport task_report(std::size_t i) const {
    const frontend::TuneTask& task = tasks_.tasks()[i];
    TaskReport t;
    t.name = task.name;
    t.label = task.workload.label();
    t.flops = task.workload.flops();
    t.weight = task.weight;
    t.trials = static_cast<int>(histories_[i].size());
    const Schedule def = backend::required_default(task.workload, target_);
    t.default_schedule = def;
    double best = kInf;
    for (const auto& rec : histories_[i]) {
      if (rec.measurement.ok() && rec.measurement.time_us < best) {
        best = rec.measurement.time_us;
        t.best_schedule = rec.schedule;
        t.best_measurement = rec.measurement;
      }
      if (rec.schedule == def) t.default_measurement = rec.measurement;
      t.curve.push_back(best);
    }
    return t;
  }

  // Whether w's space on this target has the layout knob (the host's conv space has not).
  bool tunes_layout(const Workload& w) const {
    if (!lowering::has_layout_knob(w)) return false;
    const auto space_knobs = backend::space_for(w, target_).knobs();
    return std::any_of(space_knobs.begin(), space_knobs.end(), [](const Knob& k) { return k.name == knobs::layout; });
  }

  // Each conv task's best stored time in every layout it was measured in; a task with
  // nothing measured is held at the layout and time of the schedule it runs.
  std::vector<std::map<Layout, double>> layout_times() const {
    std::vector<std::map<Layout, double>> times;
    for (std::size_t i = 0; i < tasks_.tasks().size(); ++i) {
      auto& m = times.emplace_back();
      const Workload& w = tasks_.tasks()[i].workload;
      if (!tunes_layout(w)) continue;
      for (const auto& rec : histories_[i]) {
        if (!rec.measurement.ok()) continue;
        const Layout l = *lowering::layout_of(w, rec.schedule);
        if (!m.count(l) || rec.measurement.time_us < m[l]) m[l] = rec.measurement.time_us;
      }
      if (m.empty() && tuned_.results[i].pick) {
        const Schedule& s = *tuned_.results[i].pick;
        m[*lowering::layout_of(w, s)] = backend::measure_noise_free(target_, w, s).time_us;
      }
    }
    return times;
  }

  // The transposes a variant's schedules pay, as report rows.
  std::vector<LayoutChangeRow> variant_changes(const ModelVariant& v, const TransposeCost& cost) const {
    std::vector<std::optional<Layout>> layouts;
    for (std::size_t i = 0; i < tasks_.tasks().size(); ++i) {
      const Workload& w = tasks_.tasks()[i].workload;
      const bool timed = i < v.ops.size() && v.ops[i].schedule;
      layouts.push_back(timed ? lowering::layout_of(w, *v.ops[i].schedule) : std::nullopt);
    }
    std::vector<LayoutChangeRow> rows;
    for (const auto& c : layout_changes(tasks_, layouts, cost)) {
      rows.push_back({c.from_layer, c.to_layer, lowering::layout_name(c.from), lowering::layout_name(c.to),
                      c.transpose.label(), c.time_us, c.transpose.to_json()});
    }
    return rows;
  }

  // The report's variants; (d) is the job's chosen schedule set (model_evaluation.hpp).
  std::vector<ModelVariant> variants(const LayoutChoice& layouts, const TransposeCost& transpose_cost) const {
    EvaluationOptions eval;
    eval.cost_model = spec_.cost_model;
    eval.seed = spec_.seed;
    eval.layouts = layouts.layouts;
    for (const auto& r : tuned_.results) eval.picks.push_back(r.pick);
    auto v = evaluate_variants(tasks_.tasks(), target_, histories_, eval);
    const double fallback = frontend::fallbacks_us(tasks_, target_);
    for (auto& variant : v) {
      variant.layout_changes = variant_changes(variant, transpose_cost);
      variant.fallback_us = fallback;
    }
    return v;
  }

  Json task_json(std::size_t i, const TaskReport& t, const VariantOp& chosen, const VariantOp& zero_shot,
                 const LayoutChoice& layouts, const std::vector<std::map<Layout, double>>& times) const {
    const frontend::TuneTask& task = tasks_.tasks()[i];
    const tuner::TunedTask& r = tuned_.results[i];
    Json layers = Json::array();
    for (const auto& [name, count] : task.layers) layers.push_back({{"name", name}, {"count", count}});
    Json j{{"name", task.name},
           {"workload", task.workload.to_json()},
           {"weight", task.weight},
           {"nodes", layers},
           {"trials", r.trials},
           {"best_us", optional_us(r.best_us)},
           {"default_us", optional_us(r.default_us)},
           {"best_schedule", t.best_schedule ? t.best_schedule->to_json() : Json(nullptr)},
           {"chosen_schedule", chosen.schedule ? chosen.schedule->to_json() : Json(nullptr)},
           {"chosen_us", optional_us(chosen.measurement)},
           {"provenance", chosen.provenance},
           {"zero_shot_us", optional_us(zero_shot.measurement)}};
    if (const auto l = layouts.layouts[i]) {  // the chosen layout and its best time
      j["layout"] = lowering::layout_name(*l);
      j["layout_us"] = times[i].at(*l);
    }
    return j;
  }

  Json summary_json(const JobOutcome& out, const ReportData& data, const Json& tasks) const {
    Json variants = Json::array();
    for (const auto& v : data.variants) {
      variants.push_back(
          {{"name", v.name}, {"end_to_end_us", v.end_to_end_us()}, {"throughput", v.throughput(data.batch)}});
    }
    Json changes = Json::array();
    for (const auto& c : data.variants.back().layout_changes) {  // the chosen schedules' transposes
      changes.push_back({{"from_layer", c.from_layer},
                         {"to_layer", c.to_layer},
                         {"from", c.from},
                         {"to", c.to},
                         {"transpose", c.transpose},
                         {"time_us", c.time_us}});
    }
    Json precisions = Json::array();
    for (const auto& p : data.precisions) precisions.push_back({{"name", p.name}, {"default_us", p.default_us}});
    Json folded = Json::array();
    for (const auto& [name, into] : tasks_.folded()) {
      folded.push_back({{"name", name}, {"into", into.empty() ? Json(nullptr) : Json(into)}});
    }
    const auto& memory = tuned_.memory;
    return {{"job", spec_.name},
            {"precisions", precisions},
            {"precision_warnings", tuned_.precision_warnings},
            {"measured_precision", data.measured_precision.to_json()},
            {"model", tasks_.model()},
            {"target", target_.name},
            {"trials", out.trials},
            {"resumed", out.resumed_trials},
            {"tasks_tuned", out.tasks_tuned},
            {"default_us", out.default_us},
            {"tuned_us", out.tuned_us},
            {"end_to_end", kEndToEndMeaning},
            {"layout_changes", changes},
            {"layout_changes_us", out.layout_changes_us},
            {"fallback_us", out.fallback_us},
            {"fallback_rule", frontend::kFallbackRule},
            {"graph", tasks_.graph().summary()},
            {"not_tuned", frontend::fallbacks_json(tasks_, target_)},
            {"folded", folded},
            {"fusion", data.fusion.to_json()},
            {"measured", out.measured},
            {"tasks", tasks},
            {"variants", variants},
            {"confirmation", {{"tasks", tuned_.confirmed_tasks}, {"pick_changed", tuned_.confirm_changed}}},
            {"database", out.database},
            {"table", out.table},
            {"report", out.report},
            {"memory",
             {{"weight_bytes", memory.weight_bytes},
              {"peak_activation_bytes", memory.peak_activation_bytes},
              {"peak_layer", memory.peak_layer},
              {"capacity_bytes", memory.capacity_bytes},
              {"fits", memory.fits()}}}};
  }

  const tuner::TunedModel& tuned_;
  const tuner::JobSpec& spec_;
  const Target& target_;
  const frontend::TaskSet& tasks_;
  db::TuningDatabase db_;
  std::string target_key_;
  std::vector<std::vector<db::Record>> histories_;  // per task, read once
};

}  // namespace

JobOutcome report_job(const tuner::TunedModel& tuned) {
  // The variants re-lower what the job tuned: under its fusion rules, as it measured them.
  const tuner::JobScope in_job(tuned.context);
  return JobReport(tuned).build();
}

JobOutcome run_and_report(const tuner::JobSpec& spec, const tuner::JobRunOptions& options) {
  if (spec.parallel) check_parallel(spec.parallel->topology, spec.parallel->devices);  // before hours of tuning
  return report_job(tuner::run_job(spec, options));
}

}  // namespace atvoss::report
