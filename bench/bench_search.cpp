// Search speed: one model-guided proposal round (evolve 512 candidates over the trained
// cost model for 4 generations, pick 64) on a quality-suite matmul after 256 measured
// trials. Target: < 150 ms per round. Retraining is not part of a round here:
// results are returned as infrastructure errors, which add no trials (so nothing refits).
#include <benchmark/benchmark.h>

#include "bench/quality_suite.hpp"
#include "search/search_strategy.hpp"
#include "simulator/simulator.hpp"

namespace atvoss::bench {
namespace {

void BM_ModelGuidedRound64(benchmark::State& state) {
  const auto suite = quality_suite();
  const SuiteCase& c = suite.front();  // matmul_1024 on ascend910
  search::TuneContext o;
  o.seed = 1;
  o.workload = c.workload;
  o.target = c.target;
  o.cost_model = state.range(0) == 0 ? "xgboost" : "linear";
  o.model_threads = static_cast<int>(state.range(1));
  const ScheduleSpace space = simulator::space_for(c.workload, c.target);
  auto strategy = search::make_strategy("model-guided", space, o);
  // 256 measured trials, then one untimed round so the model is fitted on them.
  std::mt19937_64 rng(7);
  std::vector<search::Trial> history;
  while (history.size() < 256) {
    auto p = space.random_valid_point(rng);
    if (!p) break;
    const Schedule s = space.schedule_at(*p);
    const auto m = simulator::simulate(c.target, c.workload, s, {0.02, 1, history.size()});
    history.push_back({s, m.status, m.time_us});
  }
  strategy->observe(history);
  const auto lost = [](const std::vector<Schedule>& batch) {
    std::vector<search::Trial> out;
    for (const auto& s : batch) out.push_back({s, Status::worker_lost, 0});
    return out;
  };
  strategy->update(lost(strategy->propose(64)));
  for (auto _ : state) {
    auto batch = strategy->propose(64);
    benchmark::DoNotOptimize(batch.data());
    state.PauseTiming();
    strategy->update(lost(batch));
    state.ResumeTiming();
  }
  state.SetLabel(o.cost_model + ", " + std::to_string(o.model_threads) + " thread(s)");
}
BENCHMARK(BM_ModelGuidedRound64)->Args({0, 1})->Args({0, 2})->Args({1, 1})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace atvoss::bench

BENCHMARK_MAIN();
