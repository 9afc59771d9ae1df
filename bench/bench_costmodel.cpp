// Cost-model speed, with the budgets it must meet (on the 2-core tuning machine):
//   features + predict for 10k candidates of one workload   < 20 ms
//   training on 10k records                                  < 2 s
// Data: random valid schedules of five BERT/ResNet-like workloads on ascend910b, timed by
// the simulator with its default 2% noise (setup, not measured). Named benchmarks per
// model kind, with featurisation alone as the baseline.
#include <benchmark/benchmark.h>

#include <random>

#include "costmodel/cost_model.hpp"
#include "simulator/presets.hpp"
#include "simulator/simulator.hpp"

namespace atvoss::costmodel {
namespace {

constexpr std::size_t kRecords = 10000;

const std::vector<const char*>& workloads() {
  static const std::vector<const char*> w = {
      R"({"op":"matmul","dims":{"M":4096,"N":2304,"K":768},"epilogue":["bias"]})",
      R"({"op":"matmul","dims":{"M":4096,"N":768,"K":3072}})",
      R"({"op":"batch_matmul","dims":{"B":384,"M":128,"N":128,"K":64}})",
      R"({"op":"conv2d","dims":{"N":8,"C":64,"H":56,"W":56,"K":64,"R":3,"S":3,"pad":1},"epilogue":["batchnorm","relu"]})",
      R"({"op":"conv2d","dims":{"N":8,"C":256,"H":28,"W":28,"K":512,"R":1,"S":1}})",
  };
  return w;
}

WorkloadGroup random_group(const Workload& w, const Target& t, std::size_t n, std::uint64_t seed) {
  const ScheduleSpace space = simulator::space_for(w, t);
  std::mt19937_64 rng(seed);
  WorkloadGroup g{w, t, {}};
  for (std::size_t i = 0; i < n; ++i) {
    const auto p = space.random_valid_point(rng);
    if (!p) break;
    const Schedule s = space.schedule_at(*p);
    const Measurement m = simulator::simulate(t, w, s, {0.02, 1, seed + i});
    g.samples.push_back({s, m.status, m.time_us});
  }
  return g;
}

// kRecords records spread over the workloads.
const std::vector<WorkloadGroup>& training_records() {
  static const std::vector<WorkloadGroup> groups = [] {
    const Target t = simulator::preset("ascend910b");
    std::vector<WorkloadGroup> g;
    for (std::size_t i = 0; i < workloads().size(); ++i) {
      g.push_back(random_group(Workload::from_json(parse_json(workloads()[i], "workload")), t,
                               kRecords / workloads().size(), 100 + i));
    }
    return g;
  }();
  return groups;
}

// 10k candidates of the first workload, as the model-guided search would score them.
const WorkloadGroup& candidates() {
  static const WorkloadGroup g =
      random_group(training_records()[0].workload, training_records()[0].target, kRecords, 7);
  return g;
}

std::vector<Schedule> candidate_schedules() {
  std::vector<Schedule> s;
  for (const auto& x : candidates().samples) s.push_back(x.schedule);
  return s;
}

ModelOptions options(const std::string& kind, const std::string& objective = "rank:pairwise") {
  ModelOptions o;
  o.kind = kind;
  o.objective = objective;
  return o;
}

void BM_Featurize10k(benchmark::State& state) {
  const auto schedules = candidate_schedules();
  const auto& g = candidates();
  for (auto _ : state) {
    benchmark::DoNotOptimize(featurize(g.workload, g.target, schedules).data.data());
  }
  state.SetItemsProcessed(std::int64_t(state.iterations() * schedules.size()));
}

void predict_10k(benchmark::State& state, const ModelOptions& o) {
  auto model = make_cost_model(o);
  model->train(training_records());
  const auto schedules = candidate_schedules();
  const auto& g = candidates();
  for (auto _ : state) {
    benchmark::DoNotOptimize(model->predict(g.workload, g.target, schedules).data());
  }
  state.SetItemsProcessed(std::int64_t(state.iterations() * schedules.size()));
}

void train_10k(benchmark::State& state, const ModelOptions& o) {
  const auto& records = training_records();
  std::size_t n = 0;
  for (const auto& g : records) n += g.samples.size();
  for (auto _ : state) {
    auto model = make_cost_model(o);
    model->train(records);
    benchmark::DoNotOptimize(model->trained());
  }
  state.counters["records"] = double(n);
}

void BM_FeaturesPredict10k_XGBoost(benchmark::State& s) { predict_10k(s, options("xgboost")); }
void BM_FeaturesPredict10k_Linear(benchmark::State& s) { predict_10k(s, options("linear")); }
void BM_Train10k_XGBoostRank(benchmark::State& s) { train_10k(s, options("xgboost")); }
void BM_Train10k_XGBoostReg(benchmark::State& s) { train_10k(s, options("xgboost", "reg:squarederror")); }
void BM_Train10k_Linear(benchmark::State& s) { train_10k(s, options("linear")); }

// CPU is process CPU (XGBoost's OpenMP threads included). On a shared machine read the
// CPU column: wall time there measures the neighbours. Run with OMP_WAIT_POLICY=passive,
// or spinning OpenMP workers bill waiting as work.
BENCHMARK(BM_Featurize10k)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_FeaturesPredict10k_XGBoost)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_FeaturesPredict10k_Linear)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_Train10k_XGBoostRank)->Unit(benchmark::kMillisecond)->Iterations(3)->MeasureProcessCPUTime();
BENCHMARK(BM_Train10k_XGBoostReg)->Unit(benchmark::kMillisecond)->Iterations(3)->MeasureProcessCPUTime();
BENCHMARK(BM_Train10k_Linear)->Unit(benchmark::kMillisecond)->Iterations(3)->MeasureProcessCPUTime();

}  // namespace
}  // namespace atvoss::costmodel

BENCHMARK_MAIN();
