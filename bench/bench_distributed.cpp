// Many-device benchmark (distributed/, docs/distributed.md):
//   1. collectives on a server and on 8 servers: per collective and size, the fastest
//      algorithm, its time, bus bandwidth and its time over the bandwidth lower bound;
//   2. data-parallel training (ResNet-50 at batch 32 per device, BERT-base) under the vendor
//      default schedules: per device count (1, 2, 4, 8 in one server; 64 over 8 servers) the
//      step time, throughput, scaling efficiency, communication share, exposed communication
//      and memory per device, with the gradient AllReduces overlapping the backward pass and
//      without; the exposed-communication reduction on 4 devices;
//   3. how long one ResNet-50 data-parallel step on 1,024 devices takes to simulate.
//   bench_distributed [--target ascend910b] [--topology ascend910b-server8] [--bucket-mb 25]
// Exit 1 if a goal is missed: ResNet-50 efficiency on 8 devices below 0.90 with overlap, a
// collective below its lower bound, overlap slower than none, or the 1,024-device step >= 1 s.
#include <cstdio>
#include <string>

#include "backend/targets.hpp"
#include "distributed/collectives.hpp"
#include "distributed/data_parallel.hpp"
#include "distributed/load_balance.hpp"
#include "distributed/parallel_plan.hpp"
#include "distributed/pipeline_parallel.hpp"
#include "distributed/tensor_parallel.hpp"
#include "distributed/topology.hpp"
#include "execution/memory_plan.hpp"
#include "frontend/device_memory.hpp"
#include "frontend/model_zoo.hpp"
#include "frontend/training.hpp"
#include "graph_bench_util.hpp"
#include "plan/graph_run.hpp"

namespace {

using namespace atvoss;
using distributed::Collective;

bool collective_table(const distributed::Topology& t) {
  std::printf("collectives on %s (%d devices), fastest algorithm:\n", t.name.c_str(), t.devices());
  std::printf("  %-15s %10s %-13s %11s %10s %8s\n", "collective", "bytes", "algorithm", "us", "busbw GB/s", "/bound");
  bool ok = true;
  for (Collective c :
       {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::broadcast}) {
    for (std::int64_t bytes : {std::int64_t(1) << 20, std::int64_t(64) << 20, std::int64_t(1) << 30}) {
      const auto r = distributed::best_collective(t, c, distributed::first_devices(t.devices()), bytes);
      const double n = t.devices();
      // Bus bandwidth as nccl-tests defines it: the bytes each device must move over the time.
      const double factor = c == Collective::all_reduce  ? 2 * (n - 1) / n
                            : c == Collective::broadcast ? 1.0
                                                         : (n - 1) / n;
      std::printf("  %-15s %10lld %-13s %11.1f %10.1f %8.2f\n", distributed::to_string(c).c_str(), (long long)bytes,
                  distributed::to_string(r.algorithm).c_str(), r.us, factor * double(bytes) / r.us / 1e3,
                  r.us / r.lower_bound_us);
      ok &= r.us >= r.lower_bound_us;
    }
  }
  return ok;
}

struct Row {
  distributed::DataParallelStep step;
  double peak_mib = 0;
};

Row run(const execution::ExecGraph& g, const execution::Device& d, const distributed::Topology& t, int devices,
        std::int64_t bucket, bool overlap) {
  distributed::DataParallelOptions o;
  o.devices = devices;
  o.bucket_bytes = bucket;
  o.overlap = overlap;
  Row r{distributed::data_parallel(g, d, {}, t, o), 0};
  r.peak_mib = double(execution::plan_memory(r.step.graph, r.step.timeline).peak_bytes) / 1048576.0;
  return r;
}

// Returns the efficiency on 8 devices with overlap; ok is cleared if overlap is ever slower.
double scaling_table(const std::string& model, const Target& target, const std::string& server, std::int64_t bucket,
                     bool& ok) {
  const frontend::TaskSet tasks = frontend::zoo_model(model);
  const auto g = plan::exec_graph_of(tasks, plan::vendor_default_variant(tasks, target), target);
  const execution::Device d = execution::Device::of(target);
  const distributed::Topology t = distributed::topology_preset(server + "-x8");
  const double weights_mib = frontend::memory_fit(tasks, target).weight_bytes / 1048576.0;
  std::printf("\n%s on %s, %s, batch %d per device, buckets of %lld MiB; weights %.1f MiB per device\n", model.c_str(),
              target.name.c_str(), t.name.c_str(), tasks.batch(), (long long)(bucket >> 20), weights_mib);
  std::printf("  %7s %-8s %10s %10s %7s %8s %11s %11s %8s\n", "devices", "overlap", "step ms", "samples/s", "eff",
              "comm %", "comm ms", "exposed ms", "act MiB");
  double eff8 = 0;
  for (int n : {1, 2, 4, 8, 64}) {
    for (bool overlap : {true, false}) {
      const Row r = run(g, d, t, n, bucket, overlap);
      const auto& s = r.step;
      std::printf("  %7d %-8s %10.2f %10.1f %7.3f %8.1f %11.3f %11.3f %8.1f\n", n, overlap ? "yes" : "no",
                  s.step_us / 1e3, n * tasks.batch() / (s.step_us / 1e6), s.efficiency(), 100 * s.comm_us / s.step_us,
                  s.comm_us / 1e3, s.exposed_comm_us() / 1e3, r.peak_mib);
      if (overlap && n == 8) eff8 = s.efficiency();
      if (!overlap && s.step_us + 1e-6 < run(g, d, t, n, bucket, true).step.step_us) ok = false;
    }
  }
  const double with = run(g, d, t, 4, bucket, true).step.exposed_comm_us();
  const double without = run(g, d, t, 4, bucket, false).step.exposed_comm_us();
  std::printf("  exposed communication on 4 devices: %.3f ms with overlap, %.3f ms without: %.0f %% less\n", with / 1e3,
              without / 1e3, without > 0 ? 100 * (1 - with / without) : 0.0);
  return eff8;
}

// Pipeline parallelism on 4 devices of one server: the stage balance and the step by
// micro-batch count and order, against data parallelism on the same 4 devices. Returns the
// stage imbalance (slowest stage over the mean).
double pipeline_table(const std::string& model, const Target& target, const std::string& server) {
  const frontend::TaskSet tasks = frontend::zoo_model(model);
  const auto g = plan::exec_graph_of(tasks, plan::vendor_default_variant(tasks, target), target);
  const execution::Device d = execution::Device::of(target);
  const distributed::Topology t = distributed::topology_preset(server);
  const distributed::StagePlacement p = distributed::place_stages(g, 4);
  std::printf("\n%s, 4 pipeline stages on %s: stage ms", model.c_str(), t.name.c_str());
  for (double us : p.stage_us) std::printf(" %.3f", us / 1e3);
  std::printf("; slowest / mean %.3f; %.2f MiB cross stages\n", p.imbalance(), p.crossing_bytes / 1048576.0);
  distributed::DataParallelOptions dp;
  dp.devices = 4;
  const double dp_us = distributed::data_parallel(g, d, {}, t, dp).step_us;
  std::printf(
      "  data parallel on 4: a step of 4 batches in %.3f ms, %.3f ms per batch; the pipeline runs one batch "
      "per step:\n",
      dp_us / 1e3, dp_us / 4e3);
  std::printf("  %-6s %6s %10s %8s %12s\n", "order", "micro", "step ms", "bubble", "vs 1 device");
  for (auto order : {distributed::PipelineOrder::gpipe, distributed::PipelineOrder::one_f_one_b}) {
    for (int m : {1, 4, 8, 16}) {
      const auto s = distributed::pipeline_parallel(g, d, {}, t, {4, m, order});
      std::printf("  %-6s %6d %10.3f %8.3f %12.3f\n", distributed::to_string(order).c_str(), m, s.step_us / 1e3,
                  s.bubble(), s.single_us / s.step_us);
    }
  }
  return p.imbalance();
}

// A zoo model's training step: the two the zoo has, or any other grown by training_graph.
frontend::TaskSet training_step(const std::string& model) {
  return frontend::training_tasks(frontend::zoo_model(model));
}

// The searched plan against pure data parallelism; returns the speed-up (>= 1: never slower).
double plan_row(const std::string& model, const Target& target, const distributed::Topology& t, int devices,
                int trials) {
  const frontend::TaskSet tasks = training_step(model);
  const auto g = plan::exec_graph_of(tasks, plan::vendor_default_variant(tasks, target), target);
  const auto s = distributed::search_plan(g, execution::Device::of(target), t, {devices, "evolutionary", trials, 1});
  const double speedup = s.data_parallel.us_per_batch() / s.best.us_per_batch();
  const auto& p = s.best.plan;
  std::printf("  %-18s %7d %12.3f %12.3f %7.2f   tp %d pp %d dp %d m %d %-5s %3lld MiB x%d %6d %9.0f %9.1f %9.1f\n",
              model.c_str(), devices, s.data_parallel.us_per_batch() / 1e3, s.best.us_per_batch() / 1e3, speedup, p.tp,
              p.pp, p.dp, p.micro_batches, distributed::to_string(p.order).c_str(), (long long)(p.bucket_bytes >> 20),
              p.overlap_chunks, s.evaluations, s.evaluations / (s.search_ms / 60000.0),
              s.data_parallel.device_peak_bytes() / 1048576.0, s.best.device_peak_bytes() / 1048576.0);
  return speedup;
}

// MatMul + collective fusion under tp-way tensor parallelism: the communication share (the
// step over the same step with instant links, less one) with and without.
void fusion_row(const std::string& model, const Target& target, const distributed::Topology& t, int tp) {
  const frontend::TaskSet tasks = training_step(model);
  const auto g = plan::exec_graph_of(tasks, plan::vendor_default_variant(tasks, target), target);
  const execution::Device d = execution::Device::of(target);
  distributed::Topology instant = t;
  instant.link = {1e6, 0};
  instant.nic = {1e6, 0};
  auto step = [&](const distributed::Topology& topo, int chunks) {
    return execution::simulate(distributed::tensor_parallel(g, topo, distributed::first_devices(tp), chunks), d)
        .makespan_us;
  };
  const double compute = step(instant, 1), plain = step(t, 1), fused = step(t, 4);
  std::printf("  %-18s tp %d: step %.3f ms unfused, %.3f ms fused (4 chunks); communication share %.1f %% -> %.1f %%\n",
              model.c_str(), tp, plain / 1e3, fused / 1e3, 100 * (plain - compute) / plain,
              100 * (fused - compute) / fused);
}

// A data-parallel run of 20 steps on 8 devices with one slow device, and with a straggler that
// appears at step 5: total time with and without moving work.
void balance_rows(const Target& target, const distributed::Topology& t) {
  const frontend::TaskSet tasks = frontend::zoo_model("resnet50-train");
  const auto g = plan::exec_graph_of(tasks, plan::vendor_default_variant(tasks, target), target);
  distributed::DataParallelOptions o;
  o.devices = 8;
  const struct {
    const char* name;
    std::vector<distributed::SpeedChange> changes;
  } cases[] = {{"device 3 at 0.8x from the start", {{0, 3, 0.8}}}, {"device 5 at 0.5x from step 5", {{5, 5, 0.5}}}};
  for (const auto& c : cases) {
    const auto fixed = distributed::run_balanced(g, execution::Device::of(target), t, o, 20, 8, c.changes, false);
    const auto moved = distributed::run_balanced(g, execution::Device::of(target), t, o, 20, 8, c.changes, true);
    std::printf("  %-32s 20 steps: %.2f ms without, %.2f ms with balancing (%.1f %% less); last step %.3f -> %.3f ms\n",
                c.name, fixed.total_us / 1e3, moved.total_us / 1e3, 100 * (1 - moved.total_us / fixed.total_us),
                fixed.step_us.back() / 1e3, moved.step_us.back() / 1e3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string target_name = "ascend910b", server = "ascend910b-server8";
  std::int64_t bucket = 25LL << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--target")
      target_name = argv[i + 1];
    else if (flag == "--topology")
      server = argv[i + 1];
    else if (flag == "--bucket-mb")
      bucket = std::max(1LL, std::atoll(argv[i + 1])) << 20;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  try {
    const Target target = backend::load_target(target_name);
    bool ok = collective_table(distributed::topology_preset(server));
    ok &= collective_table(distributed::topology_preset(server + "-x8"));
    const double eff = scaling_table("resnet50-train", target, server, bucket, ok);
    scaling_table("bert-base-train", target, server, bucket, ok);
    pipeline_table("resnet50-train", target, server);
    const double imbalance = pipeline_table("bert-base-train", target, server);
    std::printf(
        "\nsearched plan against pure data parallelism (ms per replica batch; evolutionary, 200 trials, seed 1):\n");
    std::printf("  %-18s %7s %12s %12s %7s   %-37s %6s %9s %9s %9s\n", "model", "devices", "dp ms", "plan ms", "x dp",
                "plan (tp pp dp micro order bucket chunks)", "evals", "evals/min", "dp MiB", "plan MiB");
    double best_speedup = 0;
    for (const char* model : {"resnet50-train", "bert-base-train", "moe-block"}) {
      for (int devices : {8, 64}) {
        const double x = plan_row(model, target, distributed::topology_preset(server + "-x8"), devices, 200);
        best_speedup = std::max(best_speedup, x);
        ok &= x >= 1.0 - 1e-9;
      }
    }
    std::printf("\nMatMul + collective fusion (tensor parallelism on %s):\n", server.c_str());
    fusion_row("moe-block", target, distributed::topology_preset(server), 8);
    fusion_row("bert-base-train", target, distributed::topology_preset(server), 8);
    std::printf("\nload balancing, ResNet-50 data parallel on 8 devices (8 units of 4 samples each):\n");
    balance_rows(target, distributed::topology_preset(server));
    std::printf("\nResNet-50 data parallel on 8 devices: efficiency %.3f with overlap (goal >= 0.90)\n", eff);
    std::printf("searched plan over pure data parallelism: best %.2fx (goal >= 1.3x on one model)\n", best_speedup);
    ok &= best_speedup >= 1.3;
    std::printf("BERT-base pipeline stages on 4 devices: slowest / mean %.3f (goal <= 1.10)\n", imbalance);
    ok &= eff >= 0.90 && imbalance <= 1.10;

    const frontend::TaskSet tasks = frontend::zoo_model("resnet50-train");
    const auto g = plan::exec_graph_of(tasks, plan::vendor_default_variant(tasks, target), target);
    const distributed::Topology big = distributed::topology_preset(server + "-x128");
    distributed::DataParallelOptions o;
    o.devices = big.devices();
    o.bucket_bytes = bucket;
    const double ms =
        bench::median_ms(5, [&] { (void)distributed::data_parallel(g, execution::Device::of(target), {}, big, o); });
    std::printf("simulating one ResNet-50 data-parallel step on %d devices: %.1f ms (goal < 1000)\n", big.devices(),
                ms);
    ok &= ms < 1000;
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_distributed: %s\n", e.what());
    return 2;
  }
}
