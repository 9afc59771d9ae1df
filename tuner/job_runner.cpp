// Batch job execution. Map: run_job() = prepare (validate, tasks, measurer) ->
// open db + job row -> loop { scheduler picks a task -> its session runs a round ->
// save scheduler state } -> export table -> evaluate variants -> write report.
#include "tuner/job_runner.hpp"

#include <utility>  // before Boost.Asio 1.74: its awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>

#include <cmath>
#include <deque>
#include <filesystem>
#include <iostream>
#include <limits>

#include "core/error.hpp"
#include "core/user_paths.hpp"
#include "db/table_export.hpp"
#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "host/machine.hpp"
#include "lowering/fusion_rules.hpp"
#include "lowering/knob_names.hpp"
#include "rpc/channel.hpp"
#include "tuner/farm_measurer.hpp"
#include "tuner/layout_choice.hpp"
#include "tuner/local_measurer.hpp"
#include "tuner/model_evaluation.hpp"
#include "frontend/model_zoo.hpp"
#include "frontend/onnx_import.hpp"
#include "tuner/report.hpp"
#include "tuner/strategy_setup.hpp"
#include "tuner/task_scheduler.hpp"
#include "tuner/tuner.hpp"
#include "frontend/fallback.hpp"
#include "tuner/zero_shot.hpp"
#include "costmodel/cost_model.hpp"

namespace atvoss::tuner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Valid schedules sampled per task for its zero-shot pick (and its time estimate).
constexpr int kZeroShotCandidates = 256;
constexpr const char* kEndToEndMeaning =
    "variant (d): every task's chosen schedule (measured best, else zero-shot pick) re-simulated without "
    "noise (measured again on the host), plus layout transposes and the nodes not tuned";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Ansor's "similar tasks" share a compute structure, so their achievable throughput
// is comparable: same op and epilogue and, for convolutions, the same kernel and
// stride (a 1x1 conv cannot reach a 3x3 conv's arithmetic intensity, and grouping
// them made the FLOPs bound chase an unreachable target on one task).
std::string group_of(const Workload& w) {
  std::string g = w.op();
  if (w.is_conv()) {
    g += " " + std::to_string(w.dim("R")) + "x" + std::to_string(w.dim("S")) + "/" +
         std::to_string(w.dim("stride"));
  }
  for (const auto& e : w.epilogue()) g += "+" + e;
  return g;
}

// One task's live state: its session exists once the scheduler first picks it, so
// that its transfer data includes what earlier tasks measured.
struct TaskRun {
  frontend::TuneTask task;
  std::unique_ptr<StrategySetup> setup{};
  std::unique_ptr<TuningSession> session{};
  int stored = 0;  // trials in the database (kept current once the session exists)
  double best_us = kInf;
  double default_us = kInf;
  // Search state saved in the job's task row: {"transfer_upto", "search"}; null until
  // the task's first round. Restored when the task's session is rebuilt (on resume, or
  // after it was dropped: JobRunOptions::live_sessions).
  Json saved{};
  bool tuned_now = false;  // got a round in this run
};

class JobRun {
 public:
  JobRun(const JobSpec& spec, const JobRunOptions& options, Target target, frontend::TaskSet tasks,
         std::unique_ptr<Measurer> measurer, frontend::MemoryFit memory)
      : spec_(spec), options_(options), target_(std::move(target)), tasks_(std::move(tasks)),
        memory_(std::move(memory)),
        measurer_(std::move(measurer)), db_(db::TuningDatabase::open(spec.database)),
        target_info_(db::TargetInfo::from_target(target_)), picks_(zero_shot_picks()),
        scheduler_(scheduler_tasks(), scheduler_options()),
        progress_(Progress::detect(options.quiet), spec.trials) {
    for (const auto& t : tasks_.tasks()) runs_.push_back(TaskRun{t});
    load_stored();
    open_job_row();
  }

  // The report's precision rows (model_evaluation.hpp), from the model as it was given.
  void compare_precisions(const frontend::TaskSet& model, const frontend::PrecisionSpec& precision, std::vector<std::string> warnings) {
    precisions_ = evaluate_precisions(model, precision, target_);
    precision_warnings_ = std::move(warnings);
  }

  JobOutcome run() {
    JobOutcome out;
    out.resumed_trials = total_trials();
    progress_.start(out.resumed_trials);
    int rounds = 0;
    try {
      while (total_trials() < spec_.trials) {
        if (options_.max_rounds > 0 && rounds++ >= options_.max_rounds) break;
        const auto next = scheduler_.next_task();
        if (!next) break;
        run_round(*next);
        progress_.update(task_lines(), total_trials(), objective(true), objective(false));
        if (options_.on_round) options_.on_round();
      }
    } catch (...) {
      // The rounds done are committed; mark the job stopped (not left "running") and let
      // the caller's exception through. A failure to mark it must not hide that exception.
      try {
        save_state("stopped");
      } catch (...) {
      }
      throw;
    }
    const bool complete = total_trials() >= spec_.trials || scheduler_.all_finished();
    if (complete && host::is_host_target(target_)) confirm_bests();
    save_state(complete ? "done" : "stopped");
    out = finish(out);
    // The bar ends on the job's one end-to-end figure, the one the summary and report state.
    progress_.finish(task_lines(), total_trials(), out.tuned_us, out.default_us);
    return out;
  }

 private:
  // Every task's zero-shot pick before anything is measured: the analytic model's choice
  // (deterministic, so a resumed job plans the same warm-up) among sampled valid schedules.
  std::vector<ZeroShotPick> zero_shot_picks() const {
    const auto model = costmodel::make_cost_model("heuristic", spec_.seed);
    std::vector<ZeroShotPick> picks;
    for (const auto& t : tasks_.tasks()) {
      try {
        picks.push_back(zero_shot_pick(t.workload, target_, *model, kZeroShotCandidates, spec_.seed));
      } catch (const Error&) {  // no plan to estimate (a measured table): the default, unestimated
        picks.push_back({backend::required_default(t.workload, target_), 0});
      }
    }
    return picks;
  }

  std::vector<SchedulerTask> scheduler_tasks() const {
    std::vector<SchedulerTask> v;
    for (std::size_t i = 0; i < tasks_.tasks().size(); ++i) {
      const auto& t = tasks_.tasks()[i];
      v.push_back({double(t.weight), t.workload.flops(), group_of(t.workload), picks_[i].estimate_us});
    }
    return v;
  }

  SchedulerOptions scheduler_options() const {
    SchedulerOptions o;
    o.policy = spec_.scheduler;
    o.early_stopping = spec_.early_stopping;
    o.seed = spec_.seed;
    o.budget = spec_.trials;
    o.batch_size = spec_.batch_size;
    return o;
  }

  int total_trials() const {
    int n = 0;
    for (const auto& r : runs_) n += r.stored;
    return n;
  }

  // Weighted end-to-end time of the best (tuned) or default schedules.
  double objective(bool tuned) const {
    double total = 0;
    for (const auto& r : runs_) total += r.task.weight * (tuned ? r.best_us : r.default_us);
    return total;
  }

  void load_stored() {
    for (auto& r : runs_) {
      const auto history = db_.records().history(r.task.workload.key(), target_info_.key);
      r.stored = static_cast<int>(history.size());
      const Schedule def = backend::required_default(r.task.workload, target_);
      for (const auto& rec : history) {
        if (!rec.measurement.ok()) continue;
        r.best_us = std::min(r.best_us, rec.measurement.time_us);
        if (rec.schedule == def) r.default_us = rec.measurement.time_us;
      }
    }
  }

  void open_job_row() {
    if (auto job = db_.jobs().named(spec_.name)) {
      job_id_ = job->id;
      restore_saved_state(job->spec);
      save_state("running");
    } else {
      job_id_ = db_.jobs().create(spec_.name, job_state());
      db_.jobs().update(job_id_, "running", progress_fraction());
    }
  }

  // A job whose task list changed (other model, new workloads) starts a fresh plan;
  // its stored records still count. Search states are matched by workload key.
  void restore_saved_state(const Json& saved) {
    if (saved.contains("scheduler")) {
      try {
        scheduler_.restore(saved["scheduler"]);
      } catch (const Error&) {
      }
    }
    const auto states = db_.jobs().tasks(job_id_);
    for (auto& r : runs_) {
      const auto it = states.find(r.task.workload.key());
      if (it != states.end()) r.saved = it->second;
    }
  }

  Json job_state() const { return Json{{"spec", spec_.source}, {"scheduler", scheduler_.to_json()}}; }

  double progress_fraction() const {
    return std::min(1.0, double(total_trials()) / std::max(1, spec_.trials));
  }

  // The scheduler's plan and the job's progress, at the start and end of a run (each
  // round saves them with its records: account_round).
  void save_state(const std::string& state) {
    db_.jobs().update_spec(job_id_, job_state());
    db_.jobs().update(job_id_, state, progress_fraction());
  }

  // The task's strategy, restored from its saved state when there is one. A state that
  // does not load (other strategy, older format) gives a fresh strategy; the session
  // then rebuilds its view from the database.
  std::unique_ptr<StrategySetup> strategy_of(const TaskRun& r, StrategyConfig config) const {
    const ScheduleSpace space = backend::space_for(r.task.workload, target_);
    if (r.saved.is_object() && r.saved.contains("search")) {
      try {
        config.transfer_upto = r.saved.at("transfer_upto").get<std::int64_t>();
        auto setup = std::make_unique<StrategySetup>(space, r.task.workload, target_, db_, config);
        setup->strategy().load_state(r.saved["search"]);
        return setup;
      } catch (const Error&) {
      } catch (const Json::exception&) {
      }
      config.transfer_upto.reset();
    }
    return std::make_unique<StrategySetup>(space, r.task.workload, target_, db_, config);
  }

  // Marks task i as the most recently used and drops the sessions beyond
  // JobRunOptions::live_sessions.
  void keep_live(int i) {
    std::erase(live_, i);
    live_.push_back(i);
    while (live_.size() > std::size_t(std::max(1, options_.live_sessions))) {
      TaskRun& old = runs_[live_.front()];
      live_.pop_front();
      old.session.reset();
      old.setup.reset();
    }
  }

  TuningSession& session_of(int i) {
    keep_live(i);
    TaskRun& r = runs_[i];
    if (r.session) return *r.session;
    StrategyConfig config;
    config.name = spec_.strategy;
    config.cost_model = spec_.cost_model;
    config.seed = spec_.seed ^ fnv1a64(r.task.workload.key());
    r.setup = strategy_of(r, config);
    TuneOptions o;
    o.batch_size = spec_.batch_size;
    o.early_stopping = spec_.early_stopping;
    o.repeat = spec_.repeat;
    o.seed = spec_.seed;
    o.job = spec_.name;
    o.anchors = {picks_[i].schedule};
    StrategySetup* setup = r.setup.get();
    o.after_round = [setup, this] { setup->save_if_retrained(db_); };
    o.round_checkpoint = [this, i] { return account_round(i); };
    r.session = std::make_unique<TuningSession>(r.task.workload, target_, setup->strategy(),
                                                *measurer_, db_.records(), o);
    return *r.session;
  }

  void run_round(int i) {
    const int room = spec_.trials - total_trials();
    runs_[i].tuned_now = true;
    session_of(i).run_round(std::min(room, scheduler_.round_size(i)));  // checkpoint: account_round
  }

  // Takes task i's round into the scheduler and the task's saved search state, and
  // returns the writes that save both with the job's progress. The session runs them in
  // the transaction that stores the round's records, so a resumed job finds state and
  // records in agreement, wherever a kill -9 struck.
  std::function<void()> account_round(int i) {
    TaskRun& r = runs_[i];
    const TuneResult& result = r.session->result();
    const int trials = result.trials - r.stored;
    r.stored = result.trials;
    r.best_us = result.best_us;
    if (std::isfinite(result.default_us)) r.default_us = result.default_us;
    scheduler_.record_round(i, trials, r.best_us);
    if (r.session->exhausted() || r.session->early_stopped()) scheduler_.finish(i);
    r.saved = Json{{"transfer_upto", r.setup->transfer_upto()},
                   {"search", r.setup->strategy().save_state()}};
    return [this, &r, state = job_state(), progress = progress_fraction()] {
      db_.jobs().save_task(job_id_, r.task.workload.key(), r.saved);
      db_.jobs().update_spec(job_id_, state);
      db_.jobs().update(job_id_, "running", progress);
    };
  }

  std::vector<TaskLine> task_lines() const {
    std::vector<TaskLine> lines;
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      const auto& r = runs_[i];
      lines.push_back({r.task.name, r.stored, r.best_us, r.default_us,
                       scheduler_.finished(static_cast<int>(i))});
    }
    return lines;
  }

  TaskReport task_report(const TaskRun& r) const {
    TaskReport t;
    t.name = r.task.name;
    t.label = r.task.workload.label();
    t.flops = r.task.workload.flops();
    t.weight = r.task.weight;
    const auto history = db_.records().history(r.task.workload.key(), target_info_.key);
    t.trials = static_cast<int>(history.size());
    const Schedule def = backend::required_default(r.task.workload, target_);
    t.default_schedule = def;
    double best = kInf;
    for (const auto& rec : history) {
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
    return std::any_of(space_knobs.begin(), space_knobs.end(),
                       [](const Knob& k) { return k.name == knobs::layout; });
  }

  // Each conv task's best stored time in every layout it was measured in; a task with
  // nothing measured is held at its default schedule's layout and time.
  std::vector<std::map<Layout, double>> layout_times() const {
    std::vector<std::map<Layout, double>> times;
    for (const auto& r : runs_) {
      auto& m = times.emplace_back();
      const Workload& w = r.task.workload;
      if (!tunes_layout(w)) continue;
      for (const auto& rec : db_.records().history(w.key(), target_info_.key)) {
        if (!rec.measurement.ok()) continue;
        const Layout l = *lowering::layout_of(w, rec.schedule);
        if (!m.count(l) || rec.measurement.time_us < m[l]) m[l] = rec.measurement.time_us;
      }
      if (m.empty()) {  // held at the schedule it will run: its final pick, noise-free
        const Schedule& s = *final_picks_.at(&r - runs_.data());
        m[*lowering::layout_of(w, s)] = measure_noise_free(target_, w, s).time_us;
      }
    }
    return times;
  }

  // The transposes a variant's schedules pay, as report rows.
  std::vector<LayoutChangeRow> variant_changes(const ModelVariant& v, const TransposeCost& cost) const {
    std::vector<std::optional<Layout>> layouts;
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      const Workload& w = runs_[i].task.workload;
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

  double untuned_us(const TaskRun& r) const {
    const Measurement m =
        measure_noise_free(target_, r.task.workload, backend::required_default(r.task.workload, target_));
    return m.ok() ? m.time_us : 0;
  }

  int tasks_tuned() const {
    int n = 0;
    for (const auto& r : runs_) n += std::isfinite(r.best_us) ? 1 : 0;
    return n;
  }

  // Real noise (TuneOptions::confirm_top): the fastest schedules of each task tuned in this
  // run are measured again before the table is exported, so a lucky-once time does not win.
  void confirm_bests() {
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      if (runs_[i].tuned_now) session_of(int(i)).confirm_best(kConfirmTop);
    }
  }

  // What each task never measured runs: the pick of a model trained on everything the job
  // measured, or without one its analytic zero-shot pick; nullopt for a measured task.
  void choose_final_picks() {
    EvaluationOptions eval;
    eval.cost_model = spec_.cost_model;
    eval.seed = spec_.seed;
    final_picks_ = final_picks(tasks_.tasks(), target_, db_.records(), eval);
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      const bool measured = !db_.records().best(runs_[i].task.workload.key(), target_info_.key, 1).empty();
      if (measured) {
        final_picks_[i].reset();
      } else if (!final_picks_[i]) {
        final_picks_[i] = picks_[i].schedule;
      }
    }
  }

  // The report's variants; (d) is the job's chosen schedule set (model_evaluation.hpp).
  std::vector<ModelVariant> variants(const LayoutChoice& layouts, const TransposeCost& transpose_cost) const {
    EvaluationOptions eval;
    eval.cost_model = spec_.cost_model;
    eval.seed = spec_.seed;
    eval.layouts = layouts.layouts;
    eval.picks = final_picks_;
    auto v = evaluate_variants(tasks_.tasks(), target_, db_.records(), eval);
    const double fallback = frontend::fallbacks_us(tasks_, target_);
    for (auto& variant : v) {
      variant.layout_changes = variant_changes(variant, transpose_cost);
      variant.fallback_us = fallback;
    }
    return v;
  }

  // Table entries for the tasks without a valid record: the schedule (d) runs for them.
  std::vector<table::TableEntry> unmeasured_entries(const ModelVariant& chosen) const {
    std::vector<table::TableEntry> entries;
    for (std::size_t i = 0; i < chosen.ops.size() && i < runs_.size(); ++i) {
      const VariantOp& op = chosen.ops[i];
      if (op.provenance == "measured" || !op.schedule || !op.measurement || !op.measurement->ok()) continue;
      entries.push_back({runs_[i].task.workload, *op.schedule, op.measurement->time_us, op.provenance});
    }
    return entries;
  }

  Json task_json(std::size_t i, const TaskReport& t, const VariantOp& chosen, const VariantOp& zero_shot,
                 const LayoutChoice& layouts, const std::vector<std::map<Layout, double>>& times) const {
    const auto& r = runs_[i];
    Json layers = Json::array();
    for (const auto& [name, count] : r.task.layers) layers.push_back({{"name", name}, {"count", count}});
    Json j{{"name", r.task.name}, {"workload", r.task.workload.to_json()}, {"weight", r.task.weight},
           {"nodes", layers}, {"trials", r.stored},
           {"best_us", std::isfinite(r.best_us) ? Json(r.best_us) : Json(nullptr)},
           {"default_us", std::isfinite(r.default_us) ? Json(r.default_us) : Json(nullptr)},
           {"best_schedule", t.best_schedule ? t.best_schedule->to_json() : Json(nullptr)},
           {"chosen_schedule", chosen.schedule ? chosen.schedule->to_json() : Json(nullptr)},
           {"chosen_us", chosen.measurement && chosen.measurement->ok() ? Json(chosen.measurement->time_us)
                                                                         : Json(nullptr)},
           {"provenance", chosen.provenance},
           {"zero_shot_us", zero_shot.measurement && zero_shot.measurement->ok() ? Json(zero_shot.measurement->time_us)
                                                                                 : Json(nullptr)}};
    if (const auto l = layouts.layouts[i]) {  // the chosen layout and its best time
      j["layout"] = lowering::layout_name(*l);
      j["layout_us"] = times[i].at(*l);
    }
    return j;
  }

  JobOutcome finish(JobOutcome out) {
    out.tasks = static_cast<int>(runs_.size());
    out.tasks_tuned = tasks_tuned();
    out.trials = total_trials();
    out.measured = out.trials - out.resumed_trials;
    const TransposeCost transpose_cost = swept_transpose_cost(target_);
    choose_final_picks();
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
    out.layout_changes_us = 0;
    for (const auto& c : chosen.layout_changes) out.layout_changes_us += c.time_us;
    out.fallback_us = chosen.fallback_us;
    out.database = spec_.database;
    out.table = spec_.export_path;
    out.report = spec_.report_path;
    out.memory = memory_;
    db::export_table(db_, target_info_, spec_.export_path, unmeasured_entries(chosen));
    data.job = spec_.name;
    data.target = target_.name;
    if (host::is_host_target(target_)) data.peak_gflops = host::core_peak_gflops(target_);
    data.model = tasks_.model();
    data.batch = tasks_.batch();
    data.strategy = spec_.strategy;
    data.trials = out.trials;
    data.budget = spec_.trials;
    data.tasks_tuned = out.tasks_tuned;
    for (const auto& n : tasks_.fallbacks()) {
      data.fallbacks.push_back({n.name, n.op, n.reason, n.count, frontend::fallback_us(n, target_)});
    }
    std::vector<std::optional<Schedule>> chosen_schedules;
    for (const auto& op : chosen.ops) chosen_schedules.push_back(op.schedule);
    data.fusion = fusion_report(tasks_, chosen_schedules, target_);
    data.device_memory = memory_.summary();
    data.fits_device = memory_.fits();
    Json tasks = Json::array();
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      data.tasks.push_back(task_report(runs_[i]));
      tasks.push_back(task_json(i, data.tasks.back(), chosen.ops[i], data.variants[1].ops[i], layouts, times));
    }
    data.precisions = precisions_;
    for (const auto& t : tasks_.tasks()) {
      if (const double e = frontend::int8_error_estimate(t.workload); e > 0) data.int8_error.emplace_back(t.name, e);
    }
    write_report(data, spec_.report_path);
    out.summary = summary_json(out, data, tasks);
    return out;
  }

  Json summary_json(const JobOutcome& out, const ReportData& data, const Json& tasks) const {
    Json variants = Json::array();
    for (const auto& v : data.variants) {
      variants.push_back({{"name", v.name}, {"end_to_end_us", v.end_to_end_us()},
                          {"throughput", v.throughput(data.batch)}});
    }
    Json changes = Json::array();
    for (const auto& c : data.variants.back().layout_changes) {  // the chosen schedules' transposes
      changes.push_back({{"from_layer", c.from_layer}, {"to_layer", c.to_layer}, {"from", c.from}, {"to", c.to},
                         {"transpose", c.transpose}, {"time_us", c.time_us}});
    }
    Json precisions = Json::array();
    for (const auto& p : precisions_) {
      precisions.push_back({{"name", p.name}, {"default_us", p.default_us}});
    }
    Json folded = Json::array();
    for (const auto& [name, into] : tasks_.folded()) {
      folded.push_back({{"name", name}, {"into", into.empty() ? Json(nullptr) : Json(into)}});
    }
    return {{"job", spec_.name}, {"precisions", precisions}, {"precision_warnings", precision_warnings_},
            {"model", tasks_.model()}, {"target", target_.name},
            {"trials", out.trials}, {"resumed", out.resumed_trials},
            {"tasks_tuned", out.tasks_tuned}, {"default_us", out.default_us},
            {"tuned_us", out.tuned_us}, {"end_to_end", kEndToEndMeaning},
            {"layout_changes", changes}, {"layout_changes_us", out.layout_changes_us},
            {"fallback_us", out.fallback_us}, {"fallback_rule", frontend::kFallbackRule},
            {"graph", tasks_.graph().summary()}, {"not_tuned", frontend::fallbacks_json(tasks_, target_)}, {"folded", folded}, {"fusion", data.fusion.to_json()},
            {"measured", out.measured}, {"tasks", tasks}, {"variants", variants},
            {"database", out.database}, {"table", out.table}, {"report", out.report},
            {"memory", {{"weight_bytes", memory_.weight_bytes},
                        {"peak_activation_bytes", memory_.peak_activation_bytes},
                        {"peak_layer", memory_.peak_layer},
                        {"capacity_bytes", memory_.capacity_bytes}, {"fits", memory_.fits()}}}};
  }

  const JobSpec& spec_;
  const JobRunOptions& options_;
  Target target_;
  frontend::TaskSet tasks_;
  frontend::MemoryFit memory_;
  std::unique_ptr<Measurer> measurer_;
  db::TuningDatabase db_;
  db::TargetInfo target_info_;
  std::vector<ZeroShotPick> picks_;  // per task, before anything is measured
  std::deque<int> live_;             // tasks with a live session, most recently used last
  std::vector<std::optional<Schedule>> final_picks_;  // per task never measured (choose_final_picks)
  TaskScheduler scheduler_;
  Progress progress_;
  std::vector<TaskRun> runs_;
  std::vector<PrecisionRow> precisions_;
  std::vector<std::string> precision_warnings_;  // fit_precision's, also in --json
  std::int64_t job_id_ = 0;
};

void probe_farm(const std::string& address) {
  const rpc::Endpoint ep = rpc::parse_endpoint(address, "farm");
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  asio::ip::tcp::socket socket(io);
  boost::system::error_code result = asio::error::timed_out;
  resolver.async_resolve(ep.host, std::to_string(ep.port), [&](auto ec, auto endpoints) {
    if (ec) {
      result = ec;
      return;
    }
    asio::async_connect(socket, endpoints, [&](auto ec2, auto) { result = ec2; });
  });
  io.run_for(std::chrono::seconds(3));
  if (result) throw_bad_input("farm '" + address + "' is unreachable: " + result.message());
}

}  // namespace

std::unique_ptr<Measurer> make_job_measurer(const std::string& farm) {
  if (farm.empty()) return std::make_unique<LocalMeasurer>();
  probe_farm(farm);
  return make_farm_measurer(farm);
}

frontend::TaskSet model_tasks(const JobSpec& spec) {
  frontend::TaskSet set;
  if (!spec.model.empty()) {
    if (ends_with(spec.model, ".onnx")) {
      frontend::OnnxImportOptions o;
      o.batch = spec.batch;
      set = frontend::import_onnx(spec.model, o);
    } else {
      set = frontend::zoo_model(spec.model);
    }
  } else {
    set = frontend::TaskSet(spec.name, 1);
  }
  for (const auto& w : spec.workloads) set.add_standalone(w.workload, w.name, w.weight);
  if (set.tasks().empty()) throw_bad_input("job spec: the model has no tunable task");
  return set;
}

frontend::TaskSet tasks_of(const JobSpec& spec) {
  std::vector<std::string> ignored;
  return frontend::apply_precision(model_tasks(spec), frontend::fit_precision(spec.precision, backend::load_target(spec.target), ignored));
}

JobOutcome run_job(const JobSpec& spec, const JobRunOptions& options) {
  // Validate everything before the database is opened (see header). Declared fusion
  // rules go first: the tasks' default schedules below are lowered under them.
  for (const auto& rule : spec.fusion_rules) lowering::register_fusion_rule(rule);
  Target target = backend::load_target(spec.target);
  frontend::TaskSet model = model_tasks(spec);
  std::vector<std::string> precision_warnings;
  const frontend::PrecisionSpec precision = frontend::fit_precision(spec.precision, target, precision_warnings);
  frontend::TaskSet tasks = frontend::apply_precision(model, precision);
  const auto& names = search::strategy_names();
  if (std::find(names.begin(), names.end(), spec.strategy) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw_bad_input("job spec: field 'strategy' must be one of " + list + "; got '" +
                    spec.strategy + "'");
  }
  // A task with no valid schedule on this target runs as a fallback node, named, instead
  // of failing the job (frontend/fallback.hpp).
  tasks = frontend::without_unschedulable(tasks, target);
  // The spec names where output goes; a missing directory is the user's to create.
  require_output_file(spec.database, "job spec: field 'database'");
  require_output_file(spec.export_path, "job spec: field 'export'");
  require_output_file(spec.report_path, "job spec: field 'report'");
  const std::string farm = options.farm.empty() ? spec.farm : options.farm;
  if (!spec.fusion_rules.empty() && !farm.empty()) {
    throw_bad_input("job spec: field 'fusion_rules' declares rules in this process only; a farm's "
                    "workers would measure without them (drop 'farm' or register the rules there)");
  }
  std::unique_ptr<Measurer> measurer =
      options.make_measurer ? options.make_measurer(farm) : make_job_measurer(farm);
  std::ostream& warnings = options.warnings ? *options.warnings : std::cerr;
  // A seed-format description lists what the simulator did not use (docs/hardware-facts.md section 4).
  if (const Json ignored = target.source.value("ignored", Json("nothing")); ignored.is_string() && ignored != "nothing") {
    warnings << "note: the simulator ignores these fields of " << target.name << ": " << ignored.get<std::string>() << "\n";
  }
  frontend::MemoryFit memory = frontend::memory_fit(tasks, target);
  if (const std::string w = memory.warning(target.name); !w.empty()) warnings << w << "\n";
  JobRun job(spec, options, std::move(target), std::move(tasks), std::move(measurer), std::move(memory));
  for (const auto& w : precision_warnings) warnings << "warning: " << w << "\n";
  job.compare_precisions(model, precision, precision_warnings);
  return job.run();
}

}  // namespace atvoss::tuner
