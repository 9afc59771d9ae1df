#include "distributed/parallel_plan.hpp"

#include <chrono>
#include <map>

#include "core/error.hpp"
#include "distributed/collectives.hpp"
#include "distributed/data_parallel.hpp"
#include "distributed/device_memory.hpp"
#include "distributed/tensor_parallel.hpp"
#include "execution/recompute.hpp"
#include "search/minimise.hpp"

namespace atvoss::distributed {
namespace {

void check_plan_fits(const Topology& t, const ParallelPlan& p) {
  if (p.tp < 1 || p.pp < 1 || p.dp < 1 || p.micro_batches < 1) {
    throw_bad_input("parallel plan: fields 'tp', 'pp', 'dp' and 'micro_batches' must be >= 1");
  }
  if (p.tp > t.devices_per_server) {
    throw_bad_input("parallel plan: field 'tp' must be at most the " + std::to_string(t.devices_per_server) +
                    " devices of a server, got " + std::to_string(p.tp));
  }
  if (p.devices() > t.devices()) {
    throw_bad_input("parallel plan: tp x pp x dp = " + std::to_string(p.devices()) + " devices, more than the " +
                    std::to_string(t.devices()) + " of topology '" + t.name + "'");
  }
}

// Per-op choices (FlexFlow's mixed strategies) for tensor parallelism: a knob per group of
// the step's splittable matmuls, split or whole; at most kSplitKnobs groups of consecutive ones
// (so that the space stays searchable on models with hundreds of matmuls).
constexpr int kSplitKnobs = 8;

std::string split_knob(int g) { return "split_" + std::to_string(g); }

ScheduleSpace plan_space(const Topology& t, int devices, int layers, int split_groups) {
  std::vector<Knob> knobs = {{"tp", {1, 2, 4, 8}},
                             {"pp", {1, 2, 4, 8}},
                             {"micro_batches", {1, 2, 4, 8}},
                             {"order", {0, 1}},
                             {"bucket_mib", {1, 4, 25, 100}},
                             {"overlap_chunks", {1, 4}}};
  for (int g = 0; g < split_groups; ++g) knobs.push_back({split_knob(g), {1, 0}});
  return ScheduleSpace(std::move(knobs), [&t, devices, layers](const Schedule& s) {
    const std::int64_t tp = s.at("tp"), pp = s.at("pp");
    if (tp > t.devices_per_server) return Verdict::invalid("tp beyond a server");
    if (devices % (tp * pp) != 0) return Verdict::invalid("tp x pp does not divide the devices");
    if (pp > layers) return Verdict::invalid("more stages than forward layers");
    return Verdict::valid();
  });
}

// The plan a point names; matmuls: the step's splittable ones, in knob groups.
ParallelPlan plan_of(const Schedule& s, int devices, const std::vector<int>& matmuls) {
  ParallelPlan p;
  p.tp = int(s.at("tp"));
  p.pp = int(s.at("pp"));
  p.dp = devices / (p.tp * p.pp);
  p.micro_batches = int(s.at("micro_batches"));
  p.order = s.at("order") == 0 ? PipelineOrder::gpipe : PipelineOrder::one_f_one_b;
  p.bucket_bytes = s.at("bucket_mib") << 20;
  p.overlap_chunks = int(s.at("overlap_chunks"));
  const int groups = std::min<int>(kSplitKnobs, int(matmuls.size()));
  std::vector<int> split;
  for (std::size_t i = 0; i < matmuls.size(); ++i) {
    if (s.at(split_knob(int(i * groups / matmuls.size()))) == 1) split.push_back(matmuls[i]);
  }
  if (split.size() < matmuls.size()) p.split = split;
  return p;
}

}  // namespace

PlanRun run_plan(const execution::ExecGraph& step, const execution::Device& device, const Topology& topology,
                 const ParallelPlan& plan) {
  check_plan_fits(topology, plan);
  PlanRun r{
      plan,
      tensor_parallel(step, topology, first_devices(plan.tp), plan.overlap_chunks, plan.split ? &*plan.split : nullptr),
      {},
      0,
      {}};
  if (plan.pp > 1) {
    r.graph = with_pipeline(r.graph, topology, {plan.pp, plan.micro_batches, plan.order, plan.tp}).graph;
  }
  if (plan.dp > 1 && !gradient_buffers(r.graph).empty()) {  // inference: replicas never sync
    DataParallelOptions o;
    o.devices = plan.dp;
    o.bucket_bytes = plan.bucket_bytes;
    o.device_stride = plan.tp;
    o.group_stride = plan.tp * plan.pp;
    r.graph = with_data_parallel(r.graph, topology, o).graph;
  }
  r.timeline = execution::simulate(r.graph, device);
  r.step_us = r.timeline.makespan_us;
  return r;
}

std::int64_t PlanRun::device_peak_bytes() const {
  std::int64_t peak = 0;
  for (const auto& p : memory_per_device(graph, timeline)) peak = std::max(peak, p.peak_bytes);
  return peak;
}

double PlanRun::weight_state_bytes(double weight_bytes) const {
  constexpr double kWeightAndStateBytesPerWeightByte = 16.0 / 2;
  return weight_bytes * kWeightAndStateBytesPerWeightByte / (plan.tp * plan.pp);
}

double PlanRun::device_need_bytes(double weight_bytes) const {
  return double(device_peak_bytes()) + weight_state_bytes(weight_bytes);
}

bool fit_by_recompute(PlanRun& run, const execution::Device& device, double weight_bytes, double capacity_bytes) {
  if (capacity_bytes <= 0) return true;  // before planning memory: the search calls this per plan
  const double state = run.weight_state_bytes(weight_bytes);
  if (double(run.device_peak_bytes()) + state <= capacity_bytes) return true;
  if (run.timeline.devices > 1) return false;
  const double budget = capacity_bytes - state;
  if (budget <= 0) return false;
  execution::RecomputeResult r = execution::recompute_to_fit(run.graph, device, {}, std::int64_t(budget));
  if (!r.fits) return false;
  run.graph = std::move(r.graph);
  run.timeline = std::move(r.timeline);
  run.step_us = run.timeline.makespan_us;
  run.recomputed = std::move(r.tensors);
  return true;
}

PlanSearch search_plan(const execution::ExecGraph& step, const execution::Device& device, const Topology& topology,
                       const PlanSearchOptions& options) {
  if (options.devices < 1 || options.devices > topology.devices()) {
    throw_bad_input("parallel plan: field 'devices' must be in 1.." + std::to_string(topology.devices()));
  }
  const auto start_time = std::chrono::steady_clock::now();
  const std::vector<int> matmuls = splittable_matmuls(step);
  const int groups = std::min<int>(kSplitKnobs, int(matmuls.size()));
  std::map<std::string, std::int64_t> start = {{"tp", 1},    {"pp", 1},          {"micro_batches", 1},
                                               {"order", 1}, {"bucket_mib", 25}, {"overlap_chunks", 1}};
  for (int g = 0; g < groups; ++g) start[split_knob(g)] = 1;
  const Schedule dp_point(start);
  // Seeds: pure data parallelism, then every uniform split of the devices into tensor-parallel
  // degree x stages (8 micro-batches when pipelined), every matmul split.
  const ScheduleSpace space = plan_space(topology, options.devices, forward_layers(step), groups);
  std::vector<Schedule> seeds{dp_point};
  for (int tp : {1, 2, 4, 8}) {
    for (int pp : {1, 2, 4, 8}) {
      auto point = start;
      point["tp"] = tp;
      point["pp"] = pp;
      if (pp > 1) point["micro_batches"] = 8;
      if ((tp > 1 || pp > 1) && space.check(Schedule(point)).ok) seeds.emplace_back(point);
    }
  }
  const search::Minimum m =
      search::minimise(space, seeds,
                       [&](const Schedule& s) -> std::optional<double> {
                         if (!space.check(s).ok) return std::nullopt;
                         PlanRun r = run_plan(step, device, topology, plan_of(s, options.devices, matmuls));
                         const bool fits = fit_by_recompute(r, device, options.weight_bytes, options.capacity_bytes);
                         if (!fits && s != dp_point) return std::nullopt;
                         return r.us_per_batch();
                       },
                       {options.strategy, options.trials, 8, options.seed});
  PlanSearch out;
  out.best = run_plan(step, device, topology, plan_of(m.point, options.devices, matmuls));
  out.data_parallel = run_plan(step, device, topology, plan_of(dp_point, options.devices, matmuls));
  for (PlanRun* r : {&out.best, &out.data_parallel})
    fit_by_recompute(*r, device, options.weight_bytes, options.capacity_bytes);
  out.evaluations = m.evaluations;
  out.search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_time).count();
  return out;
}

Json ParallelPlan::to_json() const {
  return {{"tp", tp},
          {"pp", pp},
          {"dp", dp},
          {"micro_batches", micro_batches},
          {"order", to_string(order)},
          {"bucket_bytes", bucket_bytes},
          {"overlap_chunks", overlap_chunks},
          {"split", split ? Json(*split) : Json("all")}};
}

Json PlanSearch::to_json() const {
  return {{"plan", best.plan.to_json()},
          {"us_per_batch", best.us_per_batch()},
          {"data_parallel_us_per_batch", data_parallel.us_per_batch()},
          {"device_peak_bytes", best.device_peak_bytes()},
          {"recomputed", best.recomputed},
          {"speedup_over_data_parallel", data_parallel.us_per_batch() / best.us_per_batch()},
          {"evaluations", evaluations},
          {"search_ms", search_ms}};
}

}  // namespace atvoss::distributed
