// Simulator speed: one simulate() per op class, and enumerating a whole space
// (space_for + checking every point), which the tuning-quality benchmark does
// for ground truth. `atvoss-sim eval` must keep up with 20k schedules/s on one
// core with noise on, so simulate() must stay well under 50 us.
//   build-*/bin/bench_simulator [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include "core/json.hpp"
#include "simulator/presets.hpp"
#include "simulator/simulator.hpp"

namespace {

using namespace atvoss;
using namespace atvoss::simulator;

Workload wl(const char* json) { return Workload::from_json(parse_json(json, "bench workload")); }

void run_simulate(benchmark::State& state, const char* workload_json) {
  const Target t = preset("ascend910b");
  const Workload w = wl(workload_json);
  const Schedule s = default_schedule(w, t);
  const SimOptions o{.noise = 0.02, .repeat = 1, .seed = 1};
  for (auto _ : state) benchmark::DoNotOptimize(simulate(t, w, s, o));
  state.SetItemsProcessed(state.iterations());
}

void BM_SimulateMatmul1024(benchmark::State& s) {
  run_simulate(s, R"({"op":"matmul","dims":{"M":1024,"N":1024,"K":1024}})");
}
void BM_SimulateMatmul8192(benchmark::State& s) {
  run_simulate(s, R"({"op":"matmul","dims":{"M":8192,"N":8192,"K":8192}})");
}
void BM_SimulateResNet50Conv(benchmark::State& s) {  // res3 3x3
  run_simulate(s, R"({"op":"conv2d","dims":{"N":1,"C":128,"H":28,"W":28,"K":128,"R":3,"S":3,"pad":1}})");
}
void BM_SimulateFusedConvBnRelu(benchmark::State& s) {
  run_simulate(s, R"({"op":"conv2d","dims":{"N":1,"C":64,"H":56,"W":56,"K":64,"R":3,"S":3,"pad":1},
                      "epilogue":["batchnorm","relu"]})");
}
BENCHMARK(BM_SimulateMatmul1024);
BENCHMARK(BM_SimulateMatmul8192);
BENCHMARK(BM_SimulateResNet50Conv);
BENCHMARK(BM_SimulateFusedConvBnRelu);

// space_for + check of every point, as the ground-truth enumeration does.
void BM_EnumerateSpaceResNet50Conv(benchmark::State& state) {
  const Target t = preset("ascend910");
  const Workload w = wl(R"({"op":"conv2d","dims":{"N":1,"C":64,"H":56,"W":56,"K":64,"R":3,"S":3,"pad":1},
                           "epilogue":["batchnorm","relu"]})");
  std::uint64_t points = 0;
  for (auto _ : state) {
    const ScheduleSpace space = space_for(w, t);
    std::uint64_t valid = 0;
    for (std::uint64_t i = 0; i < space.size(); ++i) {
      valid += space.check(space.schedule_at(space.point_at(i))).ok;
    }
    benchmark::DoNotOptimize(valid);
    points = space.size();
  }
  state.counters["points"] = double(points);
  state.SetItemsProcessed(state.iterations() * std::int64_t(points));
}
BENCHMARK(BM_EnumerateSpaceResNet50Conv)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
