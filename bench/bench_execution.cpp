// Graph execution benchmark (execution/, docs/execution.md): per model, the graph run on
// one device under the vendor default schedules (noise-free), scheduled with the critical-path
// priority and in plain graph order, against the serial sum; the memory plan's peak against
// the liveness lower bound; and how long one simulation and one plan take on this core. The
// "bound us" column is execution::makespan_lower_bound: no order of the graph runs faster, so
// a cp/bnd of 1.000 means the priority cannot be beaten there.
//   bench_execution [--target ascend910] [--onnx FILE]... [--repeat 20] [--l2-shared 1]
// --l2-shared 0 runs as if each kernel kept its standalone L2 hits beside the others (the
// model before L2 contention, execution/scheduler.hpp), to show what the sharing costs.
// Models: every zoo model, the ONNX files given, and a seeded random branchy DAG of 1000
// nodes. Then, for ResNet-50 (batch 32), BERT-base and the ResNet-50 training step, the gain of
// stage pipelining by stages and micro-batch count (micro-batch kernels re-simulated at the
// smaller batch where it splits, plan::micro_batch_cost). Last, recompute on the training steps:
// the plan squeezed to 3/4 and 1/2 of its peak with chains of one op and of up to four
// (execution/recompute.hpp). Exit 1 if a goal is missed: scheduled above serial, a plan
// below its bound, a model's plan more than 5 % above it, or a 1000-node simulation over 20 ms.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "execution/memory_plan.hpp"
#include "execution/pipeline.hpp"
#include "execution/recompute.hpp"
#include "execution/scheduler.hpp"
#include "frontend/fallback.hpp"
#include "frontend/model_zoo.hpp"
#include "frontend/onnx_import.hpp"
#include "graph_bench_util.hpp"
#include "plan/graph_run.hpp"

namespace {

using namespace atvoss;
using bench::median_ms;

// A layered random DAG: each node reads one or two nodes of the last few layers.
execution::ExecGraph random_dag(int nodes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  execution::ExecGraph g;
  std::vector<int> outs{g.add_buffer("input", 1 << 20)};
  for (int i = 0; i < nodes; ++i) {
    std::vector<int> reads{outs[outs.size() - 1 - rng() % std::min<std::size_t>(outs.size(), 8)]};
    if (rng() % 3 == 0) reads.push_back(outs[outs.size() - 1 - rng() % std::min<std::size_t>(outs.size(), 8)]);
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    const int out = g.add_buffer("t" + std::to_string(i), std::int64_t(1 + rng() % 64) << 14);
    const execution::NodeCost c{double(5 + rng() % 50), 5, int(1 + rng() % 32),
                                rng() % 2 ? execution::Unit::cube : execution::Unit::vector};
    g.add_node("n" + std::to_string(i), "op", c, reads, {out});
    outs.push_back(out);
  }
  return g;
}

// model: the plan goal (within 5 % of the bound) applies; the random DAG is there for speed.
bool row(const std::string& name, const execution::ExecGraph& g, const execution::Device& d, int repeat,
         bool model = true) {
  const execution::Timeline cp = execution::simulate(g, d);
  const execution::Timeline topo = execution::simulate(g, d, {execution::Policy::topological});
  const execution::MemoryPlan plan = execution::plan_memory(g, cp);
  const double sim_ms = median_ms(repeat, [&] { (void)execution::simulate(g, d); });
  const double plan_ms = median_ms(std::max(1, repeat / 4), [&] { (void)execution::plan_memory(g, cp); });
  const double over = plan.lower_bound_bytes > 0 ? double(plan.peak_bytes) / double(plan.lower_bound_bytes) - 1 : 0;
  const double bound = execution::makespan_lower_bound(g, d);
  std::printf("%-20s %6zu %11.1f %11.1f %11.1f %11.1f %6.3f %6.3f %6.3f %10.2f %10.2f %6.1f%% %8.2f %8.2f\n",
              name.c_str(), g.nodes().size(), cp.serial_us, bound, topo.makespan_us, cp.makespan_us,
              cp.makespan_us / cp.serial_us, cp.makespan_us / topo.makespan_us, cp.makespan_us / bound,
              plan.lower_bound_bytes / 1048576.0, plan.peak_bytes / 1048576.0, 100 * over, sim_ms, plan_ms);
  const bool ok = cp.makespan_us <= cp.serial_us * (1 + 1e-9) && cp.makespan_us >= bound * (1 - 1e-9) &&
                  plan.peak_bytes >= plan.lower_bound_bytes && (!model || over <= 0.05) &&
                  execution::check_plan(plan).empty() && (g.nodes().size() < 1000 || sim_ms < 20);
  if (!ok) std::printf("  ^ goal missed\n");
  return ok;
}

// Throughput gain of stage pipelining against micro-batch count (execution/pipeline.hpp).
void pipeline_table(const std::string& name, const execution::ExecGraph& g, const execution::Device& d,
                    const execution::MicroBatchCost& micro) {
  const double base = execution::simulate(g, d).makespan_us;
  std::printf("%-20s unpipelined %.1f us; gain (unpipelined / pipelined) by stages x micro-batches:\n", name.c_str(),
              base);
  for (int stages : {1, 2, 4}) {
    std::printf("  %d stages:", stages);
    for (int m : {1, 2, 4, 8}) {
      const double t = execution::simulate(execution::pipelined(g, stages, m, micro), d).makespan_us;
      std::printf("  m=%d %.3f", m, base / t);
    }
    std::printf("\n");
  }
}

// Recompute to fit budgets below the plan's peak, one-op chains against longer ones.
void recompute_table(const std::string& name, const execution::ExecGraph& g, const execution::Device& d) {
  const execution::Timeline t = execution::simulate(g, d);
  const std::int64_t peak = execution::plan_memory(g, t).peak_bytes;
  for (double share : {0.75, 0.5}) {
    for (int chain : {1, 4}) {
      execution::RecomputeOptions limits;
      limits.max_chain = chain;
      const auto budget = std::int64_t(share * double(peak));
      const execution::RecomputeResult r = execution::recompute_to_fit(g, d, {}, budget, limits);
      std::printf("%-20s %5.2f %6d %8zu %6d %10.2f %10.1f %6.3f %5s\n", name.c_str(), share, chain, r.tensors.size(),
                  r.recomputed_nodes, r.plan.peak_bytes / 1048576.0, r.extra_us, r.timeline.makespan_us / t.makespan_us,
                  r.fits ? "yes" : "no");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string target_name = "ascend910";
  std::vector<std::string> onnx;
  int repeat = 20;
  bool l2_shared = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--target")
      target_name = argv[i + 1];
    else if (flag == "--onnx")
      onnx.push_back(argv[i + 1]);
    else if (flag == "--l2-shared" && (std::string(argv[i + 1]) == "0" || std::string(argv[i + 1]) == "1"))
      l2_shared = std::string(argv[i + 1]) == "1";
    else if (flag == "--repeat")
      repeat = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "unknown flag %s (or a bad value: --l2-shared takes 0 or 1)\n", flag.c_str());
      return 2;
    }
  }
  const Target target = backend::load_target(target_name);
  execution::Device device = execution::Device::of(target);
  if (!l2_shared) device.l2_bytes = 0;
  std::printf("%-20s %6s %11s %11s %11s %11s %6s %6s %6s %10s %10s %7s %8s %8s\n", "model", "kernel", "serial us",
              "bound us", "topo us", "cp us", "cp/ser", "cp/top", "cp/bnd", "bound MiB", "plan MiB", "over", "sim ms",
              "plan ms");
  bool ok = true;
  auto model = [&](const std::string& name, const frontend::TaskSet& tasks) {
    ok &= row(name, plan::exec_graph_of(tasks, plan::vendor_default_variant(tasks, target), target), device, repeat);
  };
  for (const auto& name : frontend::zoo_names()) model(name, frontend::zoo_model(name));
  for (const auto& path : onnx) {
    const frontend::TaskSet tasks = frontend::without_unschedulable(frontend::import_onnx(path), target);
    model(path.substr(path.find_last_of('/') + 1), tasks);
  }
  ok &= row("random-dag-1000", random_dag(1000, 1), device, repeat, false);
  std::printf("\n");
  for (const char* name : {"resnet50-b32", "bert-base", "resnet50-train"}) {
    const frontend::TaskSet tasks = frontend::zoo_model(name);
    const plan::ModelVariant v = plan::vendor_default_variant(tasks, target);
    const execution::ExecGraph g = plan::exec_graph_of(tasks, v, target);
    pipeline_table(name, g, device, plan::micro_batch_cost(tasks, v, g, target));
  }
  std::printf("\n%-20s %5s %6s %8s %6s %10s %10s %6s %5s\n", "recompute", "share", "chain", "tensors", "nodes",
              "peak MiB", "extra us", "slower", "fits");
  for (const char* name : {"resnet50-train", "bert-base-train"}) {
    const frontend::TaskSet tasks = frontend::zoo_model(name);
    recompute_table(name, plan::exec_graph_of(tasks, plan::vendor_default_variant(tasks, target), target), device);
  }
  return ok ? 0 : 1;
}
