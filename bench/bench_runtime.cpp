// bench_runtime: atvoss_runtime's matmul through the exported table against the same call with
// no table (the host default schedule), for one BERT-base GEMM (128 x 768 x 768 + bias, one
// thread), and the runtime's per-call dispatch cost against calling the loaded kernel directly
// (8 x 8 x 8). The table is tuned here first ($ATVOSS_BENCH_TRIALS evolutionary trials on the
// real runner, default 32) unless $ATVOSS_BENCH_TABLE names an exported host table.
// Usage: bench_runtime [Google Benchmark flags]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "host/operands.hpp"
#include "runtime/runtime.hpp"
#include "tuner/single_tune.hpp"

namespace {

using namespace atvoss;

const Workload& bert_gemm() {
  static const Workload w = runtime::matmul_workload(128, 768, 768, {"bias"});
  return w;
}

std::string tuned_table() {
  if (const char* t = std::getenv("ATVOSS_BENCH_TABLE"); t && *t) return t;
  const auto dir = std::filesystem::temp_directory_path() / "atvoss-bench-runtime";
  std::filesystem::create_directories(dir);
  tuner::SingleTuneSpec spec;
  spec.target = "host";
  spec.workload = bert_gemm().to_json();
  const char* trials = std::getenv("ATVOSS_BENCH_TRIALS");
  spec.trials = trials ? std::atoi(trials) : 32;
  spec.strategy = "evolutionary";
  spec.seed = 1;
  spec.db = (dir / "tune.db").string();
  spec.export_path = (dir / "table.json").string();
  const auto out = tuner::tune_single(spec);
  std::fprintf(stderr, "tuned %s in %d trials: %.1f us (default %.1f us, runner-measured)\n",
               bert_gemm().label().c_str(), out.result.trials, out.result.best_us, out.result.default_us);
  return spec.export_path;
}

runtime::Runtime& with_table() {
  static runtime::Runtime rt([] {
    runtime::RuntimeOptions o;
    o.table = tuned_table();
    return o;
  }());
  return rt;
}

runtime::Runtime& without_table() {
  static runtime::Runtime rt;
  return rt;
}

void run_gemm(benchmark::State& state, runtime::Runtime& rt) {
  const Workload& w = bert_gemm();
  host::Operands o = host::make_operands(w, 1);
  const runtime::Choice& choice = rt.run(w, o.args());  // compiles or loads before timing
  for (auto _ : state) rt.run(w, o.args());
  state.counters["GFLOP/s"] = benchmark::Counter(w.flops(), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(runtime::to_string(choice.kind)) + " " + choice.schedule.to_json().dump());
}

void BM_GemmThroughTable(benchmark::State& state) { run_gemm(state, with_table()); }
void BM_GemmDefaultSchedule(benchmark::State& state) { run_gemm(state, without_table()); }

void BM_TinyMatmulThroughRuntime(benchmark::State& state) {
  std::vector<float> a(64, 1.0f), b(64, 1.0f), c(64);
  runtime::Runtime& rt = without_table();
  rt.matmul(a.data(), b.data(), c.data(), 8, 8, 8);
  for (auto _ : state) rt.matmul(a.data(), b.data(), c.data(), 8, 8, 8);
}

void BM_TinyMatmulKernelDirect(benchmark::State& state) {
  std::vector<float> a(64, 1.0f), b(64, 1.0f), c(64);
  runtime::Runtime& rt = without_table();
  const runtime::LoadedKernel& k = rt.kernel(runtime::matmul_workload(8, 8, 8));
  host::AtvossArgs args{};
  args.a = a.data();
  args.b = b.data();
  args.c = c.data();
  for (auto _ : state) k.call(args);
}

BENCHMARK(BM_GemmThroughTable)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
BENCHMARK(BM_GemmDefaultSchedule)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
BENCHMARK(BM_TinyMatmulThroughRuntime);
BENCHMARK(BM_TinyMatmulKernelDirect);

}  // namespace

BENCHMARK_MAIN();
