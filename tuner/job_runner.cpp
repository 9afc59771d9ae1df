// Batch job execution. Map: run_job() = prepare (validate, tasks, measurer) ->
// open db + job row -> loop { scheduler picks a task -> its session runs a round ->
// save scheduler state } -> final picks -> TunedModel (the plan is decided from it and exported:
// plan/plan_model.hpp, plan/export.hpp; the report renders both: report/job_report.hpp).
#include "tuner/job_runner.hpp"

#include <utility>  // before Boost.Asio 1.74: its awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>

#include <cmath>
#include <deque>
#include <filesystem>
#include <iostream>
#include <limits>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "core/error.hpp"
#include "core/user_paths.hpp"
#include "costmodel/cost_model.hpp"
#include "db/postgres_url.hpp"
#include "frontend/fallback.hpp"
#include "frontend/model_zoo.hpp"
#include "frontend/onnx_import.hpp"
#include "frontend/training.hpp"
#include "lowering/knob_names.hpp"
#include "rpc/channel.hpp"
#include "tuner/farm_measurer.hpp"
#include "tuner/former_records.hpp"
#include "tuner/job_context.hpp"
#include "tuner/local_measurer.hpp"
#include "tuner/strategy_setup.hpp"
#include "tuner/task_scheduler.hpp"
#include "tuner/tuner.hpp"
#include "tuner/zero_shot.hpp"

namespace atvoss::tuner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Valid schedules sampled per task for its zero-shot pick (and its time estimate).
constexpr int kZeroShotCandidates = 256;

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
    g += " " + std::to_string(w.dim("R")) + "x" + std::to_string(w.dim("S")) + "/" + std::to_string(w.dim("stride"));
  }
  for (const auto& e : w.epilogue()) g += "+" + e;
  return g;
}

// The job's database, holding the target's records stored under its former keys too.
db::TuningDatabase open_adopting(const std::string& path, const Target& target, std::ostream& notes) {
  db::TuningDatabase db = db::TuningDatabase::open(path);
  adopt_former_records(db, target, &notes);
  return db;
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
      : spec_(spec),
        options_(options),
        target_(std::move(target)),
        tasks_(std::move(tasks)),
        memory_(std::move(memory)),
        measurer_(std::move(measurer)),
        db_(open_adopting(spec.database, target_, options.warnings ? *options.warnings : std::cerr)),
        target_info_(db::TargetInfo::from_target(target_)),
        picks_(zero_shot_picks()),
        scheduler_(scheduler_tasks(), scheduler_options()),
        progress_(std::make_shared<Progress>(Progress::detect(options.quiet), spec.trials)) {
    if (!db_.jobs().try_run(spec_.name)) {
      throw Error(ErrorKind::io, "job '" + spec_.name + "' is being run by another process on " +
                                     db::display_database_name(spec_.database) +
                                     "; run it again once that one ends (it resumes where they stopped)");
    }
    for (const auto& t : tasks_.tasks()) runs_.push_back(TaskRun{t});
    load_stored();
    open_job_row();
  }

  // Tunes round by round until the budget is spent (or every task finished), then hands
  // on the tuned model with its progress bar still open.
  TunedModel run() {
    const int resumed = total_trials();
    progress_->start(resumed);
    int rounds = 0;
    try {
      while (total_trials() < spec_.trials) {
        if (options_.max_rounds > 0 && rounds++ >= options_.max_rounds) break;
        const auto next = scheduler_.next_task();
        if (!next) break;
        run_round(*next);
        if (cancelled(options_.cancel)) throw Error(ErrorKind::io, "job '" + spec_.name + "': cancelled by the caller");
        progress_->update(task_lines(), total_trials(), objective(true), objective(false));
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
    if (complete) confirm_bests();
    save_state(complete ? "done" : "stopped");
    return finish(resumed);
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

  double progress_fraction() const { return std::min(1.0, double(total_trials()) / std::max(1, spec_.trials)); }

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
    config.options = spec_.strategy_config;
    config.cost_model = spec_.cost_model;
    config.seed = spec_.seed ^ fnv1a64(r.task.workload.key());
    r.setup = strategy_of(r, config);
    TuneOptions o;
    o.batch_size = spec_.batch_size;
    o.early_stopping = spec_.early_stopping;
    o.repeat = spec_.repeat;
    o.seed = spec_.seed;
    o.cancel = options_.cancel;
    o.job = spec_.name;
    // A server database may be shared with other jobs: claim before measuring. The job's
    // name is the owner, so the job resumed after kill -9 takes its claims back at once.
    if (db::is_postgres_url(spec_.database)) o.claim_owner = "job:" + spec_.name;
    o.claim_notes = options_.warnings ? options_.warnings : &std::cerr;
    o.anchors = {picks_[i].schedule};
    StrategySetup* setup = r.setup.get();
    o.after_round = [setup, this] { setup->save_if_retrained(db_); };
    o.round_checkpoint = [this, i] { return account_round(i); };
    r.session =
        std::make_unique<TuningSession>(r.task.workload, target_, setup->strategy(), *measurer_, db_.records(), o);
    if (options_.on_trial) {
      r.session->set_on_trial([this](const TrialProgress& p) {
        TrialProgress in_job = p;  // counted among the job's trials; best_us stays the task's
        in_job.trial = ++trials_reported_;
        in_job.budget = spec_.trials;
        options_.on_trial(in_job);
      });
    }
    return *r.session;
  }

  void run_round(int i) {
    const int room = spec_.trials - total_trials();
    runs_[i].tuned_now = true;
    trials_reported_ = total_trials();
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
    r.saved = Json{{"transfer_upto", r.setup->transfer_upto()}, {"search", r.setup->strategy().save_state()}};
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
      lines.push_back({r.task.name, r.stored, r.best_us, r.default_us, scheduler_.finished(static_cast<int>(i))});
    }
    return lines;
  }

  // Real noise (TuneOptions::confirm_top): the fastest schedules of each task tuned in this
  // run on a noisy backend are measured again before the table is exported, so a lucky-once
  // time does not win.
  void confirm_bests() {
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      if (!runs_[i].tuned_now || !backend::traits_for(runs_[i].task.workload, target_).noisy) continue;
      TuningSession& session = session_of(int(i));
      session.confirm_best(kConfirmTop);
      confirmed_tasks_ += session.result().confirmed > 0 ? 1 : 0;
      confirm_changed_ += session.result().pick_changed ? 1 : 0;
    }
  }

  // What each task never measured runs: the pick of a model trained on everything the job
  // measured, or without one its analytic zero-shot pick; nullopt for a measured task.
  std::vector<std::optional<Schedule>> final_picks() const {
    std::vector<Workload> workloads;
    for (const auto& r : runs_) workloads.push_back(r.task.workload);
    TrainedPickOptions o;
    o.cost_model = spec_.cost_model;
    o.seed = spec_.seed;
    auto picks = trained_picks(workloads, target_, db_.records(), o);
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      if (std::isfinite(runs_[i].best_us)) {
        picks[i].reset();
      } else if (!picks[i]) {
        picks[i] = picks_[i].schedule;
      }
    }
    return picks;
  }

  // The tuned model: every task's results and what a task never measured would run.
  TunedModel finish(int resumed) {
    TunedModel out;
    out.spec = spec_;
    out.target = target_;
    out.tasks = tasks_;
    out.memory = memory_;
    out.trials = total_trials();
    out.resumed_trials = resumed;
    out.measured = out.trials - resumed;
    out.confirmed_tasks = confirmed_tasks_;
    out.confirm_changed = confirm_changed_;
    const auto picks = final_picks();
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      const auto& r = runs_[i];
      out.results.push_back(
          {r.stored, r.best_us, r.default_us, picks_[i], picks[i], scheduler_.finished(static_cast<int>(i))});
    }
    out.progress = progress_;
    return out;
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
  TaskScheduler scheduler_;
  std::shared_ptr<Progress> progress_;             // handed on open (TunedModel)
  int trials_reported_ = 0;                        // options_.on_trial's count of the job's trials
  int confirmed_tasks_ = 0, confirm_changed_ = 0;  // confirm_bests(), for TunedModel
  std::vector<TaskRun> runs_;
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
      o.batch = spec.batch > 0 ? spec.batch : 1;
      // Float32 tensors run in float16 where the matrix unit has it (an NPU, as ATC's default
      // precision mode), else in float32: a CPU's job on a float32 model is not told that a
      // float16 the user never asked for "is not supported".
      if (!job_target(spec).supports(DType::float16)) o.float_dtype = DType::float32;
      set = frontend::import_onnx(spec.model, o);
    } else {
      set = frontend::zoo_model(spec.model, spec.batch, spec.training);
    }
    if (spec.mode == "training") set = frontend::training_tasks(set, spec.training);
  } else {
    set = frontend::TaskSet(spec.name, 1);
  }
  for (const auto& w : spec.workloads) set.add_standalone(w.workload, w.name, w.weight);
  if (set.tasks().empty()) throw_bad_input("job spec: the model has no tunable task");
  return set;
}

frontend::TaskSet tasks_of(const JobSpec& spec) {
  std::vector<std::string> ignored;
  const frontend::TaskSet model = model_tasks(spec);
  return frontend::apply_precision(
      model, frontend::fit_precision(spec.precision, job_target(spec), ignored, frontend::model_dtype(model)));
}

Target job_target(const JobSpec& spec) {
  const Target t = backend::load_target(spec.target);
  return launched(t, spec.launch.value_or(launch_mode_of(t)), "job spec: field 'launch'");
}

TunedModel run_job(const JobSpec& spec, const JobRunOptions& options) {
  // Validate everything before the database is opened (see header). The job's context
  // goes first: the tasks' default schedules below are lowered under its fusion rules,
  // which are in force on this thread (and the measuring pool's) for the run and
  // registered nowhere (job_context.hpp).
  const JobContext context = JobContext::of(spec);
  const JobScope in_job(context);
  Target target = job_target(spec);
  frontend::TaskSet model = model_tasks(spec);
  std::vector<std::string> precision_warnings;
  const frontend::PrecisionSpec precision =
      frontend::fit_precision(spec.precision, target, precision_warnings, frontend::model_dtype(model));
  frontend::TaskSet tasks = frontend::apply_precision(model, precision);
  const auto& names = search::strategy_names();
  if (std::find(names.begin(), names.end(), spec.strategy) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw_bad_input("job spec: field 'strategy' must be one of " + list + "; got '" + spec.strategy + "'");
  }
  search::check_strategy_config(spec.strategy, spec.strategy_config);
  // A task with no valid schedule on this target runs as a fallback node, named, instead
  // of failing the job (frontend/fallback.hpp).
  tasks = frontend::without_unschedulable(tasks, target);
  // The spec names where output goes; a missing directory is the user's to create.
  db::require_database(spec.database, "job spec: field 'database'", false);
  require_replaceable_file(spec.export_path, "job spec: field 'export'");
  require_replaceable_file(spec.report_path, "job spec: field 'report'");
  require_replaceable_file(spec.model_plan_path, "job spec: field 'model_plan'");
  if (spec.parallel) require_replaceable_file(spec.parallel->plan_path, "job spec: field 'parallel.plan'");
  const std::string farm = options.farm.empty() ? spec.farm : options.farm;
  if (farm.empty()) backend::check_target(target);  // measured here: the backend's own checks first
  std::unique_ptr<Measurer> measurer = options.make_measurer ? options.make_measurer(farm) : make_job_measurer(farm);
  std::ostream& warnings = options.warnings ? *options.warnings : std::cerr;
  // A seed-format description lists what the simulator did not use (docs/hardware-facts.md section 4).
  if (const Json ignored = target.source.value("ignored", Json("nothing"));
      ignored.is_string() && ignored != "nothing") {
    warnings << "note: the simulator ignores these fields of " << target.name << ": " << ignored.get<std::string>()
             << "\n";
  }
  if (const Json taken = target.source.value("defaults", Json("none")); taken.is_string() && taken != "none") {
    warnings << "note: " << target.name
             << " does not give these figures; the simulator takes: " << taken.get<std::string>() << "\n";
  }
  frontend::MemoryFit memory = frontend::memory_fit(tasks, target, spec.training);
  if (const std::string w = memory.warning(target.name); !w.empty()) warnings << w << "\n";
  JobRun job(spec, options, std::move(target), std::move(tasks), std::move(measurer), std::move(memory));
  for (const auto& w : precision_warnings) warnings << "warning: " << w << "\n";
  TunedModel tuned = job.run();
  tuned.model = std::move(model);
  tuned.precision = precision;
  tuned.precision_warnings = std::move(precision_warnings);
  tuned.context = context;
  return tuned;
}

}  // namespace atvoss::tuner
