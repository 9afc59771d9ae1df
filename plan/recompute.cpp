#include "plan/recompute.hpp"

#include <cmath>
#include <cstdio>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "plan/graph_run.hpp"
#include "plan/graph_tuning.hpp"

namespace atvoss::plan {
namespace {

// A time simulated again that differs by more than this from the plan's is a mismatch.
constexpr double kTimeTolerance = 1e-6;

Measurement timed(double us) {
  Measurement m;
  m.time_us = us;
  return m;
}

// The plan's tasks as the TaskSet the graph run reads (its order, its graph).
frontend::TaskSet task_set_of(const ModelPlan& p) {
  frontend::TaskSet tasks(p.model, p.batch);
  for (const auto& t : p.tasks) tasks.add_standalone(t.workload, t.name, t.weight);
  if (tasks.tasks().size() != p.tasks.size()) {
    throw Error(ErrorKind::bad_input, "model plan: field 'tasks' holds one workload twice");
  }
  tasks.set_graph(p.graph);
  return tasks;
}

// The plan's schedules as a variant: each time simulated again where the target is simulated.
ModelVariant variant_of(const ModelPlan& p, bool retime, std::vector<std::string>& mismatches) {
  ModelVariant v{"the plan", "", {}};
  for (const auto& t : p.tasks) {
    double us = t.time_us;
    if (retime) {
      const Measurement m = backend::measure_noise_free(p.target, t.workload, t.schedule);
      if (!m.ok()) {
        throw Error(ErrorKind::bad_input, "model plan: task '" + t.name + "': its schedule is not valid on " +
                                              p.target.name + ": " + m.message);
      }
      if (std::abs(m.time_us - t.time_us) > kTimeTolerance * std::max(1.0, t.time_us)) {
        char line[256];
        std::snprintf(line, sizeof line, "%s: plan %.4f us, simulated now %.4f us", t.name.c_str(), t.time_us,
                      m.time_us);
        mismatches.emplace_back(line);
      }
      us = m.time_us;
    }
    v.ops.push_back({t.name, t.weight, timed(us), "", t.schedule, t.provenance});
  }
  for (const auto& c : p.transposes) {
    v.layout_changes.push_back(
        {c.from_layer, c.to_layer, c.from, c.to, c.workload.label(), c.time_us, c.workload.to_json()});
  }
  v.fallback_us = p.fallback_us;
  return v;
}

}  // namespace

Recomputed recompute(const ModelPlan& plan) {
  Recomputed out;
  bool machine_bound = false;
  for (const auto& t : plan.tasks)
    machine_bound = machine_bound || backend::traits_for(t.workload, plan.target).machine_bound;
  out.retimed = !machine_bound;
  const frontend::TaskSet tasks = task_set_of(plan);
  const ModelVariant v = variant_of(plan, out.retimed, out.mismatches);
  if (!plan.run) {
    out.end_to_end_us = v.end_to_end_us();
    return out;
  }
  const execution::Device device = model_device(plan.target);
  const execution::ExecGraph g = exec_graph_of(tasks, v, plan.target);
  const GraphKnobs knobs = knobs_of(plan.run->knobs);
  const execution::MicroBatchCost micro = micro_batch_cost(tasks, v, g, plan.target);
  const execution::Timeline t = execution::simulate(graph_under(g, knobs, micro), device, knobs.scheduler);
  out.end_to_end_us = t.makespan_us + unplaced_transposes_us(tasks, v);
  return out;
}

}  // namespace atvoss::plan
