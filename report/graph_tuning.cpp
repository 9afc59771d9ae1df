#include "report/graph_tuning.hpp"

#include <limits>

#include "execution/pipeline.hpp"
#include "search/search_strategy.hpp"

namespace atvoss::report {
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

}  // namespace

execution::ExecGraph graph_under(const execution::ExecGraph& g, const GraphKnobs& knobs) {
  if (knobs.stages <= 1 && knobs.micro_batches <= 1) return g;
  return execution::pipelined(g, knobs.stages, knobs.micro_batches);
}

GraphKnobs tune_graph_run(const execution::ExecGraph& g, const execution::Device& device, int batch,
                          const GraphTuningOptions& options) {
  const ScheduleSpace space = graph_space(batch);
  search::StrategyOptions so;
  so.seed = options.seed;
  auto strategy = search::make_strategy(options.strategy, space, so);
  GraphKnobs best;
  best.makespan_us = std::numeric_limits<double>::infinity();
  int evaluations = 0;
  auto measure = [&](const Schedule& s) {
    GraphKnobs k = knobs_of(s);
    k.makespan_us = execution::simulate(graph_under(g, k), device, k.scheduler).makespan_us;
    ++evaluations;
    if (k.makespan_us < best.makespan_us) best = k;
    return search::Trial{s, Status::ok, k.makespan_us};
  };
  const Schedule start({{"rank_weight", 1}, {"time_weight", 0}, {"affinity_weight", 0}, {"stages", 1},
                        {"micro_batches", 1}});
  const std::vector<search::Trial> first{measure(start)};
  strategy->observe(first);
  while (evaluations < options.trials) {
    const auto batch_points = strategy->propose(std::size_t(std::min(options.batch_size, options.trials - evaluations)));
    if (batch_points.empty()) break;
    std::vector<search::Trial> results;
    for (const auto& s : batch_points) results.push_back(measure(s));
    strategy->update(results);
  }
  best.evaluations = evaluations;
  return best;
}

}  // namespace atvoss::report
