#include "plan/graph_run.hpp"

#include "execution/recompute.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "backend/backend.hpp"
#include "core/cache_reuse.hpp"
#include "core/error.hpp"
#include "execution/memory_plan.hpp"
#include "execution/scheduler.hpp"
#include "frontend/fallback.hpp"
#include "frontend/micro_batch.hpp"
#include "lowering/lowering.hpp"
#include "plan/graph_tuning.hpp"

namespace atvoss::plan {
namespace {

// The HBM bytes a kernel cannot avoid: each operand once per batch (re-reads may hit L2),
// its other reads, its output, and its unfused epilogue passes. What it takes from kernels
// running beside it (execution/scheduler.hpp) is therefore a floor.
double compulsory_bytes(const lowering::KernelPlan& p) {
  double bytes = (p.a.unique_bytes + p.b.unique_bytes) * p.batch + p.other_reads + p.out_bytes;
  for (const auto& k : p.separate) bytes += k.read_bytes + k.write_bytes;
  return bytes;
}

// The operand re-reads the target's L2 serves while the kernel has it alone, and the largest
// reuse distance they need (the simulator's L2 model, core/cache_reuse.hpp).
void set_l2_use(const lowering::KernelPlan& p, const Target& target, execution::NodeCost& c) {
  for (const lowering::OperandReuse* r : {&p.a, &p.b}) {
    if (r->rereads <= 0) continue;
    c.l2_hit_bytes +=
        p.batch * r->unique_bytes * r->rereads * cache_hit_fraction(double(target.l2_bytes), r->distance_bytes);
    c.l2_distance_bytes = std::max(c.l2_distance_bytes, r->distance_bytes);
  }
}

// The cores and unit a task's kernel holds under schedule s; every core where there is no plan.
execution::NodeCost kernel_resources(const Workload& w, const Schedule& s, const Target& target) {
  execution::NodeCost c;
  c.cores = target.ai_cores;
  c.unit = execution::Unit::cube;
  c.launch_us = target.launch_us;
  try {
    const lowering::KernelPlan plan = lowering::plan_kernel(w, target, s);
    // The cores the simulator keeps busy: one tile per core at most (simulator.cpp, active).
    c.cores = int(std::min<double>(plan.cores, std::ceil(plan.tile_count())));
    c.unit = plan.uses_cube ? execution::Unit::cube : execution::Unit::vector;
    c.launch_us = plan.kernels() * target.launch_us;
    c.hbm_bytes = compulsory_bytes(plan);
    set_l2_use(plan, target, c);
  } catch (const Error&) {  // a recorded table: no plan
  }
  return c;
}

execution::NodeCost fallback_cost(const frontend::GraphNode& n, const Target& target) {
  const frontend::FallbackNode f{n.name, n.op, n.reason, n.bytes, 1};
  execution::NodeCost c{frontend::fallback_us(f, target), target.launch_us, target.vector_cores,
                        execution::Unit::vector};
  c.hbm_bytes = n.bytes;  // timed from the bytes it moves (frontend/fallback.hpp)
  return c;
}

}  // namespace

execution::NodeCost node_cost(const frontend::GraphNode& n, const Target& target, const Schedule* schedule,
                              double time_us) {
  execution::NodeCost c = fallback_cost(n, target);
  if (n.kernel && schedule) {
    c = kernel_resources(*n.kernel, *schedule, target);
    c.time_us = time_us;
  }
  c.time_us *= n.count;
  c.launch_us *= n.count;
  c.hbm_bytes *= n.count;
  c.l2_hit_bytes *= n.count;
  return c;
}

ModelVariant vendor_default_variant(const frontend::TaskSet& tasks, const Target& target) {
  ModelVariant v{"default", "the backend's default schedule for every op", {}};
  for (const auto& t : tasks.tasks()) {
    const Schedule s = backend::required_default(t.workload, target);
    v.ops.push_back({t.name, t.weight, backend::measure_noise_free(target, t.workload, s), "", s});
  }
  return v;
}

namespace {

// Each transpose's time by the graph node of its consumer layer.
std::map<std::string, double> transposes_by_node(const frontend::TaskSet& tasks, const ModelVariant& v) {
  std::map<std::string, double> by_node;
  for (const auto& c : v.layout_changes) {
    if (tasks.graph().node_index(c.to_layer) >= 0) by_node[c.to_layer] += c.time_us;
  }
  return by_node;
}

}  // namespace

double unplaced_transposes_us(const frontend::TaskSet& tasks, const ModelVariant& v) {
  double us = 0;
  for (const auto& c : v.layout_changes) us += tasks.graph().node_index(c.to_layer) >= 0 ? 0 : c.time_us;
  return us;
}

execution::ExecGraph exec_graph_of(const frontend::TaskSet& tasks, const ModelVariant& v, const Target& target) {
  std::map<std::string, std::size_t> task_of;
  for (std::size_t i = 0; i < tasks.tasks().size(); ++i) task_of.emplace(tasks.tasks()[i].workload.key(), i);
  const std::map<std::string, double> transposes = transposes_by_node(tasks, v);
  const frontend::Graph& g = tasks.graph();
  return execution::ExecGraph::from_graph(g, [&](int i) {
    const frontend::GraphNode& n = g.nodes()[i];
    const VariantOp* op = nullptr;
    if (n.kernel) {
      const auto it = task_of.find(n.kernel->key());
      op = it != task_of.end() && it->second < v.ops.size() ? &v.ops[it->second] : nullptr;
    }
    const bool chosen = op && op->schedule && op->measurement && op->measurement->ok();
    execution::NodeCost c =
        node_cost(n, target, chosen ? &*op->schedule : nullptr, chosen ? op->measurement->time_us : 0);
    if (const auto t = transposes.find(n.name); t != transposes.end()) c.time_us += t->second;
    return c;
  });
}

// Each node of g (exec_graph_of(tasks, v)) re-simulated at 1/m of its batch, under v's
// schedule where that stays valid for the smaller kernel, else the backend's default;
// nullopt (scale it) where the batch does not split or nothing is valid. Memoised.
execution::MicroBatchCost micro_batch_cost(const frontend::TaskSet& tasks, const ModelVariant& v,
                                           const execution::ExecGraph& g, const Target& target) {
  std::map<std::string, int> graph_node;
  for (int i = 0; i < int(tasks.graph().nodes().size()); ++i) graph_node.emplace(tasks.graph().nodes()[i].name, i);
  std::map<std::string, std::size_t> task_of;
  for (std::size_t i = 0; i < tasks.tasks().size(); ++i) task_of.emplace(tasks.tasks()[i].workload.key(), i);
  auto cache = std::make_shared<std::map<std::pair<int, int>, std::optional<execution::NodeCost>>>();
  return [&tasks, &v, &g, &target, graph_node, task_of, cache](int node, int m) -> std::optional<execution::NodeCost> {
    const auto hit = cache->find({node, m});
    if (hit != cache->end()) return hit->second;
    std::optional<execution::NodeCost> out;
    const auto it = graph_node.find(g.nodes()[node].name);
    if (it != graph_node.end() && tasks.graph().nodes()[it->second].kernel) try {
        frontend::GraphNode n = tasks.graph().nodes()[it->second];
        if (const auto w = frontend::micro_batch_workload(*n.kernel, m)) {
          const auto t = task_of.find(n.kernel->key());
          const VariantOp* op = t != task_of.end() && t->second < v.ops.size() ? &v.ops[t->second] : nullptr;
          Schedule s = op && op->schedule ? *op->schedule : backend::required_default(*w, target);
          Measurement time = backend::measure_noise_free(target, *w, s);
          if (!time.ok()) time = backend::measure_noise_free(target, *w, s = backend::required_default(*w, target));
          n.kernel = *w;
          if (time.ok()) out = node_cost(n, target, &s, time.time_us);
        }
      } catch (const Error&) {  // no valid schedule for the smaller kernel: scale it
      }
    return (*cache)[{node, m}] = out;
  };
}

namespace {

RunRow run_row(const char* name, double us, double utilisation, int batch) {
  return {name, us, us > 0 ? batch / us * 1e6 : 0, utilisation};
}

// The memory section of the run's summary; over the device's memory, with the activations
// recomputed until the plan fits (or the word that it cannot), and that run as a fifth row.
Json memory_section(GraphRun& run, const execution::Device& device, const frontend::MemoryFit& memory, int batch) {
  const execution::MemoryPlan& plan = run.memory_plan;
  const double need = double(plan.peak_bytes) + memory.weight_bytes;
  Json m = {{"peak_bytes", plan.peak_bytes},
            {"lower_bound_bytes", plan.lower_bound_bytes},
            {"weight_bytes", memory.weight_bytes},
            {"capacity_bytes", memory.capacity_bytes},
            {"fits", memory.capacity_bytes <= 0 || need <= memory.capacity_bytes},
            {"over_bytes", memory.capacity_bytes > 0 ? std::max(0.0, need - memory.capacity_bytes) : 0.0}};
  if (memory.capacity_bytes <= 0 || need <= memory.capacity_bytes) return m;
  const auto budget = static_cast<std::int64_t>(std::max(0.0, memory.capacity_bytes - memory.weight_bytes));
  const execution::RecomputeResult r = execution::recompute_to_fit(run.graph, device, run.knobs.scheduler, budget);
  const double left = std::max(0.0, double(r.plan.peak_bytes) + memory.weight_bytes - memory.capacity_bytes);
  const double us = r.timeline.makespan_us + run.unplaced_us;
  m["recompute"] = {
      {"tensors", r.tensors.size()}, {"extra_us", r.extra_us}, {"peak_bytes", r.plan.peak_bytes}, {"fits", r.fits},
      {"over_bytes", left},          {"end_to_end_us", us}};
  if (r.fits && !r.tensors.empty()) {
    run.rows.push_back(
        run_row("tuned, scheduled, recomputing activations to fit", us, r.timeline.utilisation(device), batch));
  }
  return m;
}

}  // namespace

Json GraphRun::summary() const {
  Json rows_json = Json::array();
  for (const auto& r : rows) {
    rows_json.push_back({{"name", r.name},
                         {"end_to_end_us", r.end_to_end_us},
                         {"throughput", r.throughput},
                         {"utilisation", r.utilisation}});
  }
  Json path = Json::array();
  for (int i : timeline.critical_path) path.push_back(graph.nodes()[i].name);
  return {{"rows", rows_json},
          {"graph_knobs",
           {{"point", knobs.point.to_json()},
            {"evaluations", knobs.evaluations},
            {"stages", knobs.stages},
            {"micro_batches", knobs.micro_batches}}},
          {"topological_us", topological_us},
          {"lower_bound_us", lower_bound_us},
          {"unplaced_transposes_us", unplaced_us},
          {"critical_path", path},
          {"memory", memory}};
}

execution::Device model_device(const Target& target) {
  execution::Device d = execution::Device::of(target);
  if (backend::target_traits(target).runs_models_serially) d.cube_cores = d.vector_cores = 1;
  return d;
}

std::optional<GraphRun> graph_run(const frontend::TaskSet& tasks, const ModelVariant& vendor_default,
                                  const ModelVariant& chosen, const Target& target, const frontend::MemoryFit& memory) {
  if (tasks.graph().empty()) return std::nullopt;
  const execution::Device device = model_device(target);
  const execution::ExecGraph def = exec_graph_of(tasks, vendor_default, target);
  const execution::ExecGraph tuned = exec_graph_of(tasks, chosen, target);
  const double def_extra = unplaced_transposes_us(tasks, vendor_default);
  GraphRun run;
  run.unplaced_us = unplaced_transposes_us(tasks, chosen);
  const execution::Timeline def_run = execution::simulate(def, device);
  const execution::Timeline tuned_plain = execution::simulate(tuned, device);
  run.topological_us =
      execution::simulate(tuned, device, {execution::Policy::topological}).makespan_us + run.unplaced_us;
  // The tuned schedules under the graph run's own tuned knobs (priority weights, pipelining).
  const execution::MicroBatchCost micro = micro_batch_cost(tasks, chosen, tuned, target);
  run.knobs = tune_graph_run(tuned, device, tasks.batch(), {}, micro);
  run.graph = graph_under(tuned, run.knobs, micro);
  run.timeline = execution::simulate(run.graph, device, run.knobs.scheduler);
  run.memory_plan = execution::plan_memory(run.graph, run.timeline);
  run.lower_bound_us = execution::makespan_lower_bound(run.graph, device) + run.unplaced_us;
  run.default_scheduled_us = def_run.makespan_us + def_extra;
  run.scheduled_us = run.timeline.makespan_us + run.unplaced_us;
  const int batch = tasks.batch();
  run.rows = {run_row("vendor default, serial", def_run.serial_us + def_extra,
                      def_run.utilisation(device, def_run.serial_us), batch),
              run_row("vendor default, scheduled", run.default_scheduled_us, def_run.utilisation(device), batch),
              run_row("tuned, serial", tuned_plain.serial_us + run.unplaced_us,
                      tuned_plain.utilisation(device, tuned_plain.serial_us), batch),
              run_row("tuned, scheduled with tuned graph knobs, memory planned", run.scheduled_us,
                      run.timeline.utilisation(device), batch)};
  run.memory = memory_section(run, device, memory, batch);
  return run;
}

}  // namespace atvoss::plan
