// Search speed: one model-guided proposal round (evolve 512 candidates over the trained
// cost model for 4 generations, pick 64) on a quality-suite matmul after 256 measured
// trials. Target: < 150 ms per round. Retraining is not part of a round here:
// results are returned as infrastructure errors, which add no trials (so nothing refits).
// BM_TableBatch16: a batch of 16 on a measured table of 10^4 or 10^6 points (knobs of ten
// values) after 100 trials, with or without three other tables as priors, either a steady
// round or a round that refits (a fifth more trials told before it; the priors' own
// models were fitted in an earlier round, once per run).
// Target: < 20 ms per batch of 16 at 10^6 points.
#include <benchmark/benchmark.h>

#include "bench/quality_suite.hpp"
#include "search/search_strategy.hpp"
#include "simulator/presets.hpp"
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

// A table of `knobs` knobs of ten values each; time is a bowl around a point that depends on
// `shift` (another table's optimum lies elsewhere).
ScheduleSpace table_space(int knobs) {
  std::vector<Knob> k;
  for (int d = 0; d < knobs; ++d) {
    std::string name = "k";  // GCC 12 warns (stringop-overflow) on "k" + std::to_string(d) here
    name += std::to_string(d);
    k.push_back({std::move(name), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}});
  }
  return ScheduleSpace(std::move(k), {});
}

search::Trial table_trial(const Schedule& s, int shift) {
  double t = 10;
  int d = 0;
  for (const auto& [name, v] : s.values()) {
    const double x = static_cast<double>(v - 1 - (3 * d++ + shift) % 10);
    t += x * x;
  }
  return {s, Status::ok, t};
}

std::vector<search::Trial> random_table_trials(const ScheduleSpace& space, std::size_t n, int shift,
                                               std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<search::Trial> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(table_trial(space.schedule_at(space.random_point(rng)), shift));
  return out;
}

void BM_TableBatch16(benchmark::State& state) {
  const int knobs = static_cast<int>(state.range(0));
  const bool priors = state.range(1) != 0, refit = state.range(2) != 0;
  const ScheduleSpace space = table_space(knobs);
  search::TuneContext o;
  o.seed = 1;
  o.workload = Workload::from_json(Json{{"op", "recorded"}, {"table", "bench"}});
  o.target = simulator::preset("ascend910b");
  o.model_threads = 1;
  for (int i = 0; priors && i < 3; ++i) {
    o.prior_spaces.push_back(
        {"other" + std::to_string(i), space.knobs(), random_table_trials(space, 4000, i + 1, 10 + i)});
  }
  const auto history = random_table_trials(space, 100, 0, 2);
  const auto fresh = [&] {
    auto s = search::make_strategy("model-guided", space, o);
    s->observe(history);
    return s;
  };
  const auto lost = [](const std::vector<Schedule>& batch) {
    std::vector<search::Trial> out;
    for (const auto& s : batch) out.push_back({s, Status::worker_lost, 0});
    return out;
  };
  auto strategy = fresh();
  strategy->update(lost(strategy->propose(16)));  // fitted, the priors' own models too
  std::mt19937_64 rng(3);
  for (auto _ : state) {
    if (refit) {  // a fifth more trials: the next round refits
      state.PauseTiming();
      strategy->observe(random_table_trials(space, (strategy->trials() + 4) / 5, 0, rng()));
      state.ResumeTiming();
    }
    auto batch = strategy->propose(16);
    benchmark::DoNotOptimize(batch.data());
    state.PauseTiming();
    strategy->update(lost(batch));
    state.ResumeTiming();
  }
  state.SetLabel(std::to_string(space.size()) + " points" + (priors ? ", 3 prior tables" : "") +
                 (refit ? ", round with a fit" : ", steady round"));
}
BENCHMARK(BM_TableBatch16)->ArgsProduct({{4, 6}, {0, 1}, {0, 1}})->Unit(benchmark::kMillisecond)->Iterations(10);

}  // namespace
}  // namespace atvoss::bench

BENCHMARK_MAIN();
