// Map: run_and_report() = run_job -> plan_model -> export_plan -> report_job; report_job() =
// the plan's variants beside (b) and (c) -> per-task detail -> HTML -> summary JSON -> bar.
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
#include "plan/export.hpp"
#include "report/fusion_report.hpp"
#include "report/html_report.hpp"
#include "report/model_evaluation.hpp"
#include "report/parallel_report.hpp"
#include "tuner/job_context.hpp"

namespace atvoss::report {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
Json optional_us(double us) { return std::isfinite(us) ? Json(us) : Json(nullptr); }
Json optional_us(const std::optional<Measurement>& m) { return m && m->ok() ? Json(m->time_us) : Json(nullptr); }

class JobReport {
 public:
  JobReport(const tuner::TunedModel& tuned, const plan::PlannedModel& planned,
            const std::vector<std::vector<db::Record>>& histories)
      : tuned_(tuned),
        planned_(planned),
        spec_(tuned.spec),
        target_(tuned.target),
        tasks_(tuned.tasks),
        histories_(histories),
        training_(frontend::is_training_step(tuned.tasks)) {}

  JobOutcome build() {
    const plan::ModelPlan& plan = planned_.plan;
    JobOutcome out;
    out.tasks = static_cast<int>(tasks_.tasks().size());
    out.tasks_tuned = tuned_.tasks_tuned();
    out.trials = tuned_.trials;
    out.resumed_trials = tuned_.resumed_trials;
    out.measured = tuned_.measured;
    ReportData data;
    data.variants = variants();
    const ModelVariant& chosen = planned_.chosen;
    out.default_us = plan.default_us;
    out.tuned_us = plan.end_to_end_us;
    out.layout_changes = int(chosen.layout_changes.size());
    for (const auto& c : chosen.layout_changes) out.layout_changes_us += c.time_us;
    out.fallback_us = chosen.fallback_us;
    out.database = spec_.database;
    out.table = spec_.export_path;
    out.model_plan = spec_.model_plan_path;
    out.report = spec_.report_path;
    out.memory = tuned_.memory;
    describe_job(data, out);
    std::vector<std::optional<Schedule>> chosen_schedules;
    for (const auto& op : chosen.ops) chosen_schedules.push_back(op.schedule);
    data.fusion = fusion_report(tasks_, chosen_schedules, target_);
    Json tasks = Json::array();
    for (std::size_t i = 0; i < tasks_.tasks().size(); ++i) {
      data.tasks.push_back(task_report(i));
      tasks.push_back(task_json(i, data.tasks.back(), chosen.ops[i], data.variants[1].ops[i]));
    }
    data.precisions = evaluate_precisions(tuned_.model, tuned_.precision, target_);
    for (const auto& t : tasks_.tasks()) {
      if (const double e = frontend::int8_error_estimate(t.workload); e > 0) data.int8_error.emplace_back(t.name, e);
    }
    data.measured_precision = measure_host_precisions(tasks_, target_, spec_.seed);
    if (planned_.run) data.graph = graph_view(*planned_.run, tuned_.memory);
    Json parallel = parallel_section(chosen, data);
    write_report(data, spec_.report_path);
    out.summary = summary_json(out, data, tasks);
    out.summary["execution"] = planned_.run ? planned_.run->summary() : Json(nullptr);
    if (!parallel.is_null()) out.summary["parallel"] = std::move(parallel);
    if (planned_.run) out.memory_plan = planned_.run->memory_plan;
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

  // A training step's update as the report names it ("adam, mixed precision"); "" at inference.
  std::string training_label() const {
    if (!training_) return "";
    return to_string(spec_.training.optimizer) + (spec_.training.mixed_precision ? ", mixed precision" : "");
  }

  // Who issues the kernels, and what each launch costs, in words.
  std::string launch_label() const {
    std::ostringstream s;
    s << (launch_mode_of(target_) == LaunchMode::sunk ? "graph sunk to the device, " : "kernels launched by the host, ")
      << target_.launch_us << " us per kernel";
    return s.str();
  }

  void describe_job(ReportData& data, const JobOutcome& out) const {
    data.job = spec_.name;
    data.target = target_.name;
    data.launch = launch_label();
    for (const auto& task : tasks_.tasks()) {  // the backends' own word (BackendTraits)
      data.peak_gflops = std::max(data.peak_gflops, backend::traits_for(task.workload, target_).peak_gflops);
    }
    data.model = tasks_.model();
    data.batch = tasks_.batch();
    data.training = training_label();
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

  // The plan's variants, (a) and (d), around the two that explain it, (b) and (c)
  // (model_evaluation.hpp), each with its transposes and the nodes not tuned.
  std::vector<ModelVariant> variants() const {
    EvaluationOptions eval;
    eval.cost_model = spec_.cost_model;
    eval.seed = spec_.seed;
    std::vector<ModelVariant> v{planned_.vendor_default};
    const plan::TransposeCost transpose_cost = plan::swept_transpose_cost(target_);
    for (auto& variant : evaluate_variants(tasks_.tasks(), target_, histories_, eval)) {
      variant.layout_changes = plan::variant_transposes(tasks_, variant, transpose_cost);
      variant.fallback_us = planned_.chosen.fallback_us;
      v.push_back(std::move(variant));
    }
    v.push_back(planned_.chosen);
    return v;
  }

  Json task_json(std::size_t i, const TaskReport& t, const VariantOp& chosen, const VariantOp& zero_shot) const {
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
           {"check", chosen.note},
           {"zero_shot_us", optional_us(zero_shot.measurement)}};
    if (const auto& l = planned_.plan.tasks[i].layout) {  // the chosen layout and its time
      j["layout"] = *l;
      j["layout_us"] = chosen.measurement->time_us;
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
            {"batch", tasks_.batch()},
            {"training", training_ ? Json{{"optimizer", to_string(spec_.training.optimizer)},
                                          {"mixed_precision", spec_.training.mixed_precision}}
                                   : Json(nullptr)},
            {"target", target_.name},
            {"launch", {{"mode", target_.launch}, {"us_per_kernel", target_.launch_us}}},
            {"trials", out.trials},
            {"resumed", out.resumed_trials},
            {"tasks_tuned", out.tasks_tuned},
            {"default_us", out.default_us},
            {"tuned_us", out.tuned_us},
            {"end_to_end", planned_.plan.meaning},
            {"model_check", planned_.plan.model_check},
            {"model_plan", out.model_plan},
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
  const plan::PlannedModel& planned_;
  const tuner::JobSpec& spec_;
  const Target& target_;
  const frontend::TaskSet& tasks_;
  const std::vector<std::vector<db::Record>>& histories_;  // per task, read once
  const bool training_;                                    // the tasks are a training step
};

}  // namespace

JobOutcome report_job(const tuner::TunedModel& tuned, const plan::PlannedModel& planned,
                      const std::vector<std::vector<db::Record>>& histories) {
  // The variants re-lower what the job tuned: under its fusion rules, as it measured them.
  const tuner::JobScope in_job(tuned.context);
  return JobReport(tuned, planned, histories).build();
}

JobOutcome run_and_report(const tuner::JobSpec& spec, const tuner::JobRunOptions& options) {
  if (spec.parallel) check_parallel(spec.parallel->topology, spec.parallel->devices);  // before hours of tuning
  const tuner::TunedModel tuned = tuner::run_job(spec, options);
  const auto histories = plan::task_histories(tuned);
  const plan::PlannedModel planned = plan::plan_model(tuned, histories);
  plan::export_plan(planned.plan, spec.export_path, spec.model_plan_path);
  JobOutcome out = report_job(tuned, planned, histories);
  out.plan = planned.plan;
  return out;
}

}  // namespace atvoss::report
