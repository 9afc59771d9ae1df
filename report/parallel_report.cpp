#include "report/parallel_report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "core/error.hpp"
#include "distributed/data_parallel.hpp"
#include "distributed/device_memory.hpp"
#include "distributed/parallel_plan.hpp"
#include "distributed/topology.hpp"
#include "frontend/device_memory.hpp"
#include "frontend/fallback.hpp"
#include "frontend/model_zoo.hpp"
#include "frontend/onnx_import.hpp"
#include "frontend/training.hpp"
#include "plan/graph_run.hpp"
#include "report/html_text.hpp"

namespace atvoss::report {
namespace {

frontend::TaskSet load_training_step(const std::string& model, const Target& target) {
  if (model.empty()) throw_bad_input("parallel report: field 'model' is empty; expected a zoo name or an .onnx file");
  const bool onnx = model.size() > 5 && model.compare(model.size() - 5, 5, ".onnx") == 0;
  const frontend::TaskSet forward =
      onnx ? frontend::without_unschedulable(frontend::import_onnx(model), target) : frontend::zoo_model(model);
  return frontend::training_tasks(forward);
}

std::int64_t peak_of(const execution::ExecGraph& g, const execution::Timeline& t) {
  std::int64_t peak = 0;
  for (const auto& p : distributed::memory_per_device(g, t)) peak = std::max(peak, p.peak_bytes);
  return peak;
}

// A device's memory (distributed::PlanRun::device_need_bytes) against the target's capacity.
Json device_memory(const distributed::PlanRun& run, double weight_bytes, const Target& target) {
  const double peak = double(run.device_peak_bytes()), need = run.device_need_bytes(weight_bytes);
  const double capacity = double(target.device_memory_bytes);
  return {{"plan_peak_bytes", peak},
          {"weights_and_optimizer_bytes", need - peak},
          {"need_bytes", need},
          {"capacity_bytes", capacity},
          {"fits", capacity <= 0 || need <= capacity}};
}

// One row of the scaling table: the tuned step (and the vendor default's, beside it) on
// `devices` replicas.
Json scaling_row(const execution::ExecGraph& step, const execution::ExecGraph& default_step, const execution::Device& d,
                 const distributed::Topology& t, int devices, std::int64_t bucket, bool overlap, int batch) {
  distributed::DataParallelOptions o;
  o.devices = devices;
  o.bucket_bytes = bucket;
  o.overlap = overlap;
  const auto s = distributed::data_parallel(step, d, {}, t, o);
  const double default_us = distributed::data_parallel(default_step, d, {}, t, o).step_us;
  return {{"devices", devices},
          {"overlap", overlap},
          {"step_us", s.step_us},
          {"samples_per_s", devices * batch / (s.step_us / 1e6)},
          {"default_step_us", default_us},
          {"default_samples_per_s", devices * batch / (default_us / 1e6)},
          {"efficiency", s.efficiency()},
          {"comm_share", s.step_us > 0 ? s.comm_us / s.step_us : 0.0},
          {"exposed_comm_us", s.exposed_comm_us()},
          {"device_peak_bytes", peak_of(s.graph, s.timeline)}};
}

// The plan's bars, each device's streams in a lane group of their own.
GraphView timeline_of(const execution::ExecGraph& g, const execution::Timeline& t) {
  GraphView v;
  int streams = 1;
  for (const auto& r : t.runs) streams = std::max(streams, r.stream + 1);
  std::vector<std::vector<bool>> used(t.devices, std::vector<bool>(streams, false));
  for (std::size_t i = 0; i < g.nodes().size(); ++i) used[g.nodes()[i].cost.device][t.runs[i].stream] = true;
  std::vector<std::vector<int>> lane(t.devices, std::vector<int>(streams, -1));
  for (int d = 0; d < t.devices; ++d) {
    for (int s = 0; s < streams; ++s) {
      if (!used[d][s]) continue;
      lane[d][s] = int(v.lane_labels.size());
      v.lane_labels.push_back("d" + std::to_string(d) + "." + std::to_string(s));
    }
  }
  for (std::size_t i = 0; i < g.nodes().size(); ++i) {
    const auto& r = t.runs[i];
    v.bars.push_back({g.nodes()[i].name, g.nodes()[i].op, r.start_us, r.end_us,
                      lane[g.nodes()[i].cost.device][r.stream], int(r.cores.size()), false});
  }
  return v;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Each task of `tasks` at the schedule `tuned` chose for the same workload of `tuned_tasks`
// (a training step's forward kernels are the tuned model's tasks), else at the backend's
// default, noise-free; ops in the order of tasks.tasks(), as exec_graph_of reads them.
ModelVariant costed(const frontend::TaskSet& tasks, const frontend::TaskSet& tuned_tasks, const ModelVariant& tuned,
                    const Target& target) {
  std::map<std::string, const VariantOp*> chosen;
  for (std::size_t i = 0; i < tuned_tasks.tasks().size() && i < tuned.ops.size(); ++i) {
    const VariantOp& op = tuned.ops[i];
    if (op.schedule && op.measurement && op.measurement->ok()) chosen[tuned_tasks.tasks()[i].workload.key()] = &op;
  }
  ModelVariant v{"tuned", "the job's chosen schedules; the backend's default for kernels it did not tune", {}};
  for (const auto& t : tasks.tasks()) {
    const auto it = chosen.find(t.workload.key());
    if (it != chosen.end()) {
      v.ops.push_back({t.name, t.weight, it->second->measurement, "", it->second->schedule});
      continue;
    }
    const Schedule s = backend::required_default(t.workload, target);
    v.ops.push_back({t.name, t.weight, backend::measure_noise_free(target, t.workload, s), "", s});
  }
  return v;
}

}  // namespace

ParallelReport parallel_report(const ParallelReportOptions& o) {
  const Target target = backend::load_target(o.target);
  const distributed::Topology topology = distributed::load_topology(o.topology);
  const frontend::TaskSet tasks = load_training_step(o.model, target);
  return parallel_report(tasks, tasks, plan::vendor_default_variant(tasks, target), target, topology, o);
}

ParallelReport parallel_report(const frontend::TaskSet& tasks, const frontend::TaskSet& tuned_tasks,
                               const ModelVariant& tuned, const Target& target, const distributed::Topology& topology,
                               const ParallelReportOptions& o) {
  const execution::ExecGraph step = plan::exec_graph_of(tasks, costed(tasks, tuned_tasks, tuned, target), target);
  const execution::Device device = execution::Device::of(target);
  const bool training = !distributed::gradient_buffers(step).empty();
  ParallelReport out;
  Json scaling = Json::array();
  const execution::ExecGraph default_step =
      plan::exec_graph_of(tasks, plan::vendor_default_variant(tasks, target), target);
  std::set<int> counts(o.scaling.begin(), o.scaling.end());
  counts.insert(o.devices);  // the plan's own device count is a row too
  for (int n : counts) {
    if (!training || n < 1 || n > topology.devices()) continue;
    for (bool overlap : {true, false}) {
      scaling.push_back(scaling_row(step, default_step, device, topology, n, o.bucket_bytes, overlap, tasks.batch()));
    }
  }
  const double weights = frontend::memory_fit(tasks, target).weight_bytes;
  const distributed::PlanSearch search = distributed::search_plan(
      step, device, topology, {o.devices, o.strategy, o.trials, o.seed, weights, double(target.device_memory_bytes)});
  Json found = search.to_json();
  found.erase("plan");
  found["memory"] = device_memory(search.best, weights, target);
  found["data_parallel_memory"] = device_memory(search.data_parallel, weights, target);
  out.summary = {{"model", tasks.model()},
                 {"target", target.name},
                 {"topology", topology.to_json()},
                 {"batch", tasks.batch()},
                 {"devices", o.devices},
                 {"mode", training ? "training" : "inference"},
                 {"scaling", scaling},
                 {"plan", search.best.plan.to_json()},
                 {"search", found}};
  out.timeline = timeline_of(search.best.graph, search.best.timeline);
  return out;
}

void check_parallel(const std::string& topology, int devices) {
  const distributed::Topology t = distributed::load_topology(topology);
  if (devices < 1 || devices > t.devices()) {
    throw_bad_input("job spec: field 'parallel.devices' must be in 1.." + std::to_string(t.devices()) +
                    " (the devices of topology '" + t.name + "'), got " + std::to_string(devices));
  }
}

std::string format_parallel_report(const Json& s) {
  std::ostringstream out;
  out << s["model"].get<std::string>() << " on " << s["target"].get<std::string>() << ", topology "
      << s["topology"]["name"].get<std::string>() << ", batch " << s["batch"] << " per replica, "
      << s["mode"].get<std::string>() << "\n";
  if (!s["scaling"].empty()) {
    out << "\ndata parallelism (gradient AllReduce overlapping the backward pass, and not), the tuned step "
           "beside the vendor default's:\n"
        << "  devices overlap  default/s  samples/s  tuned x   step ms    eff  comm %  exposed ms  peak MiB/device\n";
  }
  for (const auto& r : s["scaling"]) {
    const double tuned = r["samples_per_s"].get<double>(), def = r["default_samples_per_s"].get<double>();
    out << fmt("  %7.0f", r["devices"].get<double>()) << (r["overlap"].get<bool>() ? " yes    " : " no     ")
        << fmt("%10.1f", def) << fmt("%11.1f", tuned) << fmt("%8.3f", def > 0 ? tuned / def : 0.0)
        << fmt("%10.3f", r["step_us"].get<double>() / 1e3) << fmt("%7.3f", r["efficiency"].get<double>())
        << fmt("%8.1f", 100 * r["comm_share"].get<double>()) << fmt("%12.3f", r["exposed_comm_us"].get<double>() / 1e3)
        << fmt("%17.1f", r["device_peak_bytes"].get<double>() / 1048576.0) << "\n";
  }
  const Json& f = s["search"];
  out << "\nsearched plan on " << s["devices"] << " devices: " << s["plan"].dump() << "\n  "
      << fmt("%.3f", f["us_per_batch"].get<double>() / 1e3) << " ms per replica batch against "
      << fmt("%.3f", f["data_parallel_us_per_batch"].get<double>() / 1e3) << " ms for pure data parallelism ("
      << fmt("%.2fx", f["speedup_over_data_parallel"].get<double>()) << "), " << f["evaluations"]
      << " plans simulated in " << fmt("%.0f ms", f["search_ms"].get<double>()) << "\n";
  const Json& m = f["memory"];
  out << "  memory per device: " << fmt("%.1f MiB", m["need_bytes"].get<double>() / 1048576.0) << " ("
      << fmt("%.1f MiB", m["plan_peak_bytes"].get<double>() / 1048576.0) << " activations and gradients, "
      << fmt("%.1f MiB", m["weights_and_optimizer_bytes"].get<double>() / 1048576.0) << " weights and Adam state)";
  if (m["capacity_bytes"].get<double>() > 0) {
    out << (m["fits"].get<bool>() ? " fits " : " does NOT fit ")
        << fmt("%.1f GiB", m["capacity_bytes"].get<double>() / 1073741824.0);
  }
  out << "\n";
  return out.str();
}

std::string render_parallel_section(const ParallelReport& r) {
  std::ostringstream out;
  out << "<section id=\"parallel\"><h2>" << esc(r.summary["model"].get<std::string>())
      << " over many devices</h2><p class=\"note\">docs/distributed.md: data parallelism by device count, and "
         "the plan searched over tensor, pipeline and data parallelism.</p><pre>"
      << esc(format_parallel_report(r.summary)) << "</pre><h3>The chosen plan's step, one lane group per device</h3>"
      << "<div class=\"wide\">" << render_timeline_svg(r.timeline) << "</div></section>";
  return out.str();
}

std::string render_parallel_html(const ParallelReport& r) {
  return "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>atvoss parallel plan: " +
         esc(r.summary["model"].get<std::string>()) + "</title></head><body>" + render_parallel_section(r) +
         "</body></html>\n";
}

}  // namespace atvoss::report
