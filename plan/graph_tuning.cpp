#include "plan/graph_tuning.hpp"

#include "execution/pipeline.hpp"
#include "search/minimise.hpp"

namespace atvoss::plan {
namespace {

ScheduleSpace graph_space(int batch) {
  std::vector<std::int64_t> micro;
  for (std::int64_t m : {1, 2, 4, 8}) {
    if (batch % m == 0) micro.push_back(m);
  }
  return ScheduleSpace({{"rank_weight", {0, 1, 2, 4}},
                        {"time_weight", {0, 1, 2, 4}},
                        {"affinity_weight", {0, 1, 2, 4}},
                        {"stages", {1, 2, 4}},
                        {"micro_batches", micro}},
                       {});
}

}  // namespace

GraphKnobs knobs_of(const Schedule& s) {
  GraphKnobs k;
  k.scheduler.rank_weight = double(s.at("rank_weight"));
  k.scheduler.time_weight = double(s.at("time_weight"));
  k.scheduler.affinity_weight = double(s.at("affinity_weight"));
  k.stages = int(s.at("stages"));
  k.micro_batches = int(s.at("micro_batches"));
  k.point = s;
  return k;
}

execution::ExecGraph graph_under(const execution::ExecGraph& g, const GraphKnobs& knobs,
                                 const execution::MicroBatchCost& micro_cost) {
  if (knobs.stages <= 1 && knobs.micro_batches <= 1) return g;
  return execution::pipelined(g, knobs.stages, knobs.micro_batches, micro_cost);
}

GraphKnobs tune_graph_run(const execution::ExecGraph& g, const execution::Device& device, int batch,
                          const GraphTuningOptions& options, const execution::MicroBatchCost& micro_cost) {
  const Schedule start(
      {{"rank_weight", 1}, {"time_weight", 0}, {"affinity_weight", 0}, {"stages", 1}, {"micro_batches", 1}});
  const search::Minimum m =
      search::minimise(graph_space(batch), start,
                       [&](const Schedule& s) -> std::optional<double> {
                         const GraphKnobs k = knobs_of(s);
                         return execution::simulate(graph_under(g, k, micro_cost), device, k.scheduler).makespan_us;
                       },
                       {options.strategy, options.trials, options.batch_size, options.seed});
  GraphKnobs best = knobs_of(m.point);
  best.makespan_us = m.value;
  best.evaluations = m.evaluations;
  return best;
}

}  // namespace atvoss::plan
