// Parallel report: a model's training step over many devices (distributed/), as `atvoss-plan`
// shows it — the scaling table of data parallelism (step time, throughput beside the vendor
// default's, scaling efficiency, communication share, exposed communication and memory per
// device, for each device count of `scaling` and the plan's that the topology holds), the plan searched over tensor,
// pipeline and data parallelism against pure data parallelism, the chosen plan as JSON, and its timeline with each
// device's lanes. Costs: every task at the backend's default schedule, noise-free (graph_run.hpp); a model that is not
// a training step is grown into one (frontend/training.hpp). Threading: the caller's thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/target.hpp"
#include "distributed/topology.hpp"
#include "frontend/task_set.hpp"
#include "report/graph_view.hpp"
#include "report/html_report.hpp"

namespace atvoss::report {

struct ParallelReportOptions {
  std::string model;  // zoo name or .onnx file
  std::string target = "ascend910b";
  std::string topology = "ascend910b-server8-x8";  // preset, file or inline JSON
  int devices = 8;                                 // of the searched plan
  std::vector<int> scaling = {1, 2, 4, 8, 64};     // device counts of the table (those the topology has)
  std::int64_t bucket_bytes = 25LL << 20;
  std::string strategy = "evolutionary";
  int trials = 64;
  std::uint64_t seed = 0;
};

struct ParallelReport {
  // {"model", "target", "topology", "batch", "scaling": [{devices, step_us, samples_per_s,
  //  default_step_us, default_samples_per_s (every task at the vendor default), efficiency, comm_share,
  //  exposed_comm_us, device_peak_bytes, overlap}], "plan": the chosen plan (distributed/parallel_plan.hpp), "search":
  //  {us_per_batch, data_parallel_us_per_batch, speedup_over_data_parallel, evaluations, search_ms, device_peak_bytes,
  //  memory, data_parallel_memory}}; memory: {plan_peak_bytes, weights_and_optimizer_bytes (the device's share of the
  //  weights with mixed-precision Adam's state, PlanRun::device_need_bytes), need_bytes, capacity_bytes, fits}. The
  //  search skips plans that do not fit the target's device memory.
  Json summary;
  GraphView timeline;  // the chosen plan's step, one lane group per device
};

// bad_input naming the field for an unknown model, target or topology, or a device count the
// topology does not have.
ParallelReport parallel_report(const ParallelReportOptions& options);

// The same for a job's tasks (a training step, or a model for inference: data parallelism
// then needs no AllReduce), each costed at the schedule `tuned` chose for the same workload
// of `tuned_tasks` (its ops in that order), else at the backend's default. options.model,
// .target and .topology are not read.
ParallelReport parallel_report(const frontend::TaskSet& tasks, const frontend::TaskSet& tuned_tasks,
                               const ModelVariant& tuned, const Target& target, const distributed::Topology& topology,
                               const ParallelReportOptions& options);

// bad_input unless the topology loads and holds `devices` (a job's "parallel" block, checked
// before tuning).
void check_parallel(const std::string& topology, int devices);

// The report's section: the tables and the chosen plan's per-device timeline.
std::string render_parallel_section(const ParallelReport& report);

std::string format_parallel_report(const Json& summary);  // text tables
std::string render_parallel_html(const ParallelReport& report);

}  // namespace atvoss::report
