// Model analysis (model_analysis.hpp): every task's planned (else best stored) schedule is simulated
// again without noise, its profile read as utilisations, and the usual bars applied.
#include "report/model_analysis.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "core/error.hpp"
#include "db/postgres_url.hpp"
#include "db/tuning_database.hpp"
#include "frontend/fallback.hpp"
#include "lowering/lowering.hpp"
#include "report/model_evaluation.hpp"
#include "tuner/job_context.hpp"
#include "tuner/job_runner.hpp"

namespace atvoss::report {
namespace {

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
  return buf;
}

// Roofline: the longer of the compute floor and the compulsory-traffic floor.
std::string roofline_bound(const Workload& w, const Target& t) {
  const double compute_s = w.flops() / t.peak_flops(w.dtype());
  const double memory_s = w.compulsory_bytes() / t.hbm_bytes_per_second();
  return compute_s >= memory_s ? "compute" : "memory";
}

// The bars l breaks, each with what usually fixes it on this chip.
std::vector<std::pair<std::string, std::string>> broken_bars(const LayerAnalysis& l, const UtilisationBars& bars) {
  std::vector<std::pair<std::string, std::string>> out;
  if (l.bound == "memory" && l.bandwidth < bars.bandwidth) {
    out.emplace_back("bandwidth " + percent(l.bandwidth) + " < " + percent(bars.bandwidth) + " (memory-bound)",
                     "larger tiles along the contiguous axis and async_copy_depth >= 2 keep HBM busy; "
                     "fusing the next elementwise op saves a round trip");
  }
  if (l.bound == "compute" && l.compute < bars.compute) {
    out.emplace_back("compute " + percent(l.compute) + " < " + percent(bars.compute) + " (compute-bound)",
                     "tiles that are whole multiples of the matrix unit and enough tiles for every core; "
                     "tune this layer with more trials");
  }
  if (l.sync > bars.sync) {
    out.emplace_back("sync " + percent(l.sync) + " > " + percent(bars.sync),
                     "raise async_copy_depth so copies overlap compute");
  }
  return out;
}

// Ranks layers by share of the model's time and flags the heavy ones (model_analysis.hpp).
void rank_and_flag(std::vector<LayerAnalysis>& layers, const UtilisationBars& bars) {
  double total = 0;
  for (const auto& l : layers) total += l.weight * l.time_us;
  for (auto& l : layers) l.share = total > 0 ? l.weight * l.time_us / total : 0;
  std::stable_sort(layers.begin(), layers.end(), [](const auto& a, const auto& b) { return a.share > b.share; });
  double before = 0;
  for (auto& l : layers) {
    const bool heavy = before < bars.top_share;
    before += l.share;
    for (auto& [flag, hint] : broken_bars(l, bars)) {
      if (heavy) {
        l.flags.push_back(flag);
        l.hints.push_back(hint);
      } else {
        l.minor.push_back(flag);
      }
    }
  }
}

// The schedule a task runs: its entry in the job's table (the model plan's, plan/export.hpp),
// else its best record, else its default.
Schedule schedule_of(const frontend::TuneTask& task, const Target& t, const db::RecordStore& records,
                     const std::string& target_key, const table::ScheduleTable* table, std::string& source) {
  if (table) {
    const auto hit = table->lookup(task.workload);
    if (hit.kind == table::MatchKind::exact) {
      source = hit.entry->provenance;
      return hit.entry->schedule;
    }
  }
  if (const auto best = records.best(task.workload.key(), target_key, 1); !best.empty()) {
    source = "measured";
    return best.front().schedule;
  }
  source = "default";
  return backend::required_default(task.workload, t);
}

LayerAnalysis analyze_layer(const frontend::TuneTask& task, const Target& t, const db::RecordStore& records,
                            const std::string& target_key, const table::ScheduleTable* table) {
  LayerAnalysis l;
  l.name = task.name;
  l.label = task.workload.label();
  l.weight = task.weight;
  l.schedule = schedule_of(task, t, records, target_key, table, l.source);
  l.tuned = l.source == "measured";
  const Measurement m = backend::measure_noise_free(t, task.workload, l.schedule);
  if (!m.ok()) {
    throw Error(ErrorKind::internal,
                "analyze: the stored schedule of " + task.name + " no longer simulates: " + m.message);
  }
  const Profile& p = m.profile;
  l.time_us = m.time_us;
  l.bound = roofline_bound(task.workload, t);
  // Over the kernels' own time, as a profiler measures a kernel: launches excluded.
  const double busy_us = std::max(m.time_us - p.launch_us, 1e-9);
  l.bandwidth = std::min(1.0, p.gm_bytes / (busy_us * 1e-6) / t.hbm_bytes_per_second());
  const auto plan = backend::backend_for(task.workload, t).lower(task.workload, t, l.schedule);
  const bool matrix = plan && plan->uses_cube;  // no plan (no lowering): its own compute time
  l.compute = std::min(1.0, matrix ? p.cube_utilisation * m.time_us / busy_us : p.compute_us / busy_us);
  l.sync = p.sync_wait_us / busy_us;
  return l;
}

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

db::TuningDatabase open_existing(const std::string& path, const std::string& field) {
  if (!db::is_postgres_url(path) && !file_exists(path)) {
    throw_bad_input(field + ": no tuning database at '" + path + "' (tune the model first)");
  }
  db::OpenOptions o;
  o.must_exist = true;
  o.read_only = true;
  try {
    return db::TuningDatabase::open(path, o);
  } catch (const Error& e) {
    // A server that cannot be reached is a failure (exit 1), not bad input.
    if (db::is_postgres_url(path) && e.kind() == ErrorKind::io) throw;
    throw_bad_input(field + ": cannot read '" + db::display_database_name(path) +
                    "' as a tuning database: " + e.what());
  }
}

}  // namespace

int ModelAnalysis::flagged() const {
  int n = 0;
  for (const auto& l : layers) n += l.flags.empty() ? 0 : 1;
  return n;
}

double ModelAnalysis::flagged_share() const {
  double s = 0;
  for (const auto& l : layers) s += l.flags.empty() ? 0 : l.share;
  return s;
}

Json ModelAnalysis::to_json() const {
  Json out = Json::array();
  for (const auto& l : layers) {
    out.push_back({{"name", l.name},
                   {"workload", l.label},
                   {"weight", l.weight},
                   {"tuned", l.tuned},
                   {"source", l.source},
                   {"schedule", l.schedule.to_json()},
                   {"time_us", l.time_us},
                   {"bound", l.bound},
                   {"bandwidth", l.bandwidth},
                   {"compute", l.compute},
                   {"sync", l.sync},
                   {"share", l.share},
                   {"flags", l.flags},
                   {"hints", l.hints},
                   {"minor", l.minor}});
  }
  return Json{{"model", model},
              {"target", target},
              {"flagged", flagged()},
              {"flagged_share", flagged_share()},
              {"layers", out}};
}

ModelAnalysis analyze_tuned_model(const frontend::TaskSet& tasks, const Target& target, const db::RecordStore& records,
                                  const UtilisationBars& bars, const table::ScheduleTable* table) {
  if (backend::target_traits(target).machine_bound) {
    throw_bad_input("analyze: target '" + target.name +
                    "' is a real machine (a CPU); the utilisation profile comes from the NPU simulator");
  }
  ModelAnalysis a;
  a.model = tasks.model();
  a.target = target.name;
  const std::string target_key = db::TargetInfo::from_target(target).key;
  // A task with no valid schedule on the target runs as a fallback node: no profile.
  const frontend::TaskSet schedulable = frontend::without_unschedulable(tasks, target);
  for (const auto& task : schedulable.tasks()) {
    if (!lowering::can_lower(task.workload)) continue;  // a measured table has no profile
    a.layers.push_back(analyze_layer(task, target, records, target_key, table));
  }
  rank_and_flag(a.layers, bars);
  return a;
}

ModelAnalysis analyze_job(const tuner::JobSpec& spec, const UtilisationBars& bars) {
  // The job's declared fusion rules shape its plans, so the profiles need them too: in
  // force here for the analysis, as for the job (tuner/job_context.hpp), never registered.
  const tuner::JobScope in_job(tuner::JobContext::of(spec));
  const Target target = tuner::job_target(spec);
  const frontend::TaskSet tasks = tuner::tasks_of(spec);
  const db::TuningDatabase db = open_existing(spec.database, "job spec: field 'database'");
  // The table the job exported gives each unmeasured task the pick it runs; a job stopped
  // before its end has none yet, and a table that does not load is not the job's.
  std::shared_ptr<const table::ScheduleTable> table;
  if (file_exists(spec.export_path)) {
    try {
      table = table::ScheduleTable::load(spec.export_path);
    } catch (const Error&) {
    }
  }
  return analyze_tuned_model(tasks, target, db.records(), bars, table.get());
}

ModelAnalysis analyze_job_file(const std::string& path, const UtilisationBars& bars) {
  tuner::JobSpec spec;
  try {
    spec = tuner::JobSpec::load(path);
  } catch (const Error& e) {
    if (!e.is_bad_input()) throw;
    throw_bad_input("--job: " + std::string(e.what()));
  }
  return analyze_job(spec, bars);
}

ModelAnalysis analyze_stored_model(const std::string& db_path, const std::string& model, const std::string& target_arg,
                                   const UtilisationBars& bars) {
  if (model.empty()) throw_bad_input("--model: give a zoo model name or an .onnx file");
  Target target;
  try {
    target = backend::load_target(target_arg);
  } catch (const Error& e) {
    if (!e.is_bad_input()) throw;
    throw_bad_input(std::string("--target: ") + e.what());
  }
  tuner::JobSpec spec;
  spec.name = "analyze";
  spec.model = model;
  frontend::TaskSet tasks;
  try {
    tasks = model_tasks(spec);
  } catch (const Error& e) {
    if (!e.is_bad_input()) throw;
    const std::string why = e.what();
    throw_bad_input("--model: " + (why.rfind("model: ", 0) == 0 ? why.substr(7) : why));
  }
  const db::TuningDatabase db = open_existing(db_path, "--db");
  return analyze_tuned_model(tasks, target, db.records(), bars);
}

std::string format_model_analysis(const ModelAnalysis& a, const UtilisationBars& bars) {
  std::string out = "model " + a.model + " on " + a.target + ": " + std::to_string(a.layers.size()) +
                    " layers, planned (else best stored) schedules profiled on the simulator\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-28s %6s %10s %6s %-7s %9s %8s %6s  %s\n", "layer (by share)", "weight",
                "time us", "share", "bound", "bandwidth", "compute", "sync", "flags");
  out += line;
  for (const auto& l : a.layers) {
    std::string flags;
    for (const auto& f : l.flags) flags += (flags.empty() ? "" : "; ") + f;
    for (const auto& f : l.minor) flags += (flags.empty() ? "" : "; ") + ("(light) " + f);
    if (!l.tuned) {
      flags = (l.source == "default" ? "untuned (default schedule)" : "unmeasured (" + l.source + " pick)") +
              std::string(flags.empty() ? "" : "; ") + flags;
    }
    std::snprintf(line, sizeof line, "%s %-28.28s %6d %10.2f %6s %-7s %9s %8s %6s  %s\n", l.flags.empty() ? " " : "!",
                  l.name.c_str(), l.weight, l.time_us, percent(l.share).c_str(), l.bound.c_str(),
                  percent(l.bandwidth).c_str(), percent(l.compute).c_str(), percent(l.sync).c_str(), flags.c_str());
    out += line;
    for (const auto& h : l.hints) out += "      hint: " + h + "\n";
  }
  out += std::to_string(a.flagged()) + " of " + std::to_string(a.layers.size()) + " layers flagged, holding " +
         percent(a.flagged_share()) + " of the model's time: the heaviest layers (" + percent(bars.top_share) +
         " of the time) that break a bar (bandwidth < " + percent(bars.bandwidth) + " while memory-bound, compute < " +
         percent(bars.compute) + " while compute-bound, sync > " + percent(bars.sync) + ")\n";
  return out;
}

}  // namespace atvoss::report
