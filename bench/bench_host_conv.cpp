// bench_host_conv: the host backend's conv2d against oneDNN, one run side by side.
// For each ResNet-50 3x3 conv layer at batch 1 (56x56x64->64, 28x28x128->128,
// 14x14x256->256, 7x7x512->512; stride 1, pad 1): a naive loop nest, the atvoss default
// schedule, atvoss tuned (--trials, default 200, the tuner's default search on the real runner;
// $ATVOSS_HOST_MAX_THREADS=1, so the threads knob holds only 1) and
// oneDNN's convolution, all on one thread and all in NHWC activations, in GFLOP/s, as a
// fraction of the measured single-core peak (host/machine.hpp) and as a ratio to oneDNN.
// oneDNN runs twice: with the weights in its own blocked format (format "any", reordered once
// outside the timed loop: its best case) and with the HWIO weights atvoss takes. atvoss
// kernels take HWIO weights; a schedule that packs them has them packed once, outside the timed
// calls (host/packed_weights.hpp), as the runner times it and an inference runtime runs it.
// Timing: the atvoss kernels are first measured by atvoss-kernel-runner as the tuner does
// (median of repeats of >= 1 ms: "runner" column). Then every implementation, the atvoss
// kernels loaded from the compile cache after the runner has checked them, is timed in this
// process, pinned to one core, in interleaved rounds (each round one >= 1 ms window of each),
// so that a machine shared with other work slows all of them alike; the table gives the
// median window by wall clock and by this thread's CPU time (which leaves out the time the
// thread waits for a core, but not the caches other tenants take). The tuner keeps its
// fastest measurement, which on a noisy machine is partly luck, so one more row re-measures
// the default and the 5 fastest stored schedules side by side and reports the fastest.
// A database that already holds the trials is resumed, not tuned again.
// Usage: bench_host_conv [--trials N] [--rounds N] [--quick] [--db FILE] [--only NAME]
#include <omp.h>

#include <dnnl.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/host_side_by_side.hpp"
#include "bench/resnet_conv.hpp"
#include "host/operands.hpp"

namespace {

using namespace atvoss;
using namespace atvoss::bench;

using Layer = ConvLayer;

// The textbook loop nest over NHWC / HWIO, output channels innermost (so the compiler
// vectorises it): no blocking, no packing, no register tile.
void naive(const Layer& l, const float* in, const float* wt, float* out) {
  const std::int64_t H = l.hw, W = l.hw, C = l.c, K = l.k;
  for (std::int64_t oh = 0; oh < H; ++oh) {
    for (std::int64_t ow = 0; ow < W; ++ow) {
      float* o = out + (oh * W + ow) * K;
      for (std::int64_t k = 0; k < K; ++k) o[k] = 0;
      for (std::int64_t r = 0; r < 3; ++r) {
        const std::int64_t ih = oh - 1 + r;
        if (ih < 0 || ih >= H) continue;
        for (std::int64_t s = 0; s < 3; ++s) {
          const std::int64_t iw = ow - 1 + s;
          if (iw < 0 || iw >= W) continue;
          for (std::int64_t c = 0; c < C; ++c) {
            const float x = in[(ih * W + iw) * C + c];
            const float* w = wt + ((r * 3 + s) * C + c) * K;
            for (std::int64_t k = 0; k < K; ++k) o[k] += x * w[k];
          }
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  omp_set_num_threads(1);                       // oneDNN (OpenMP build) on one thread
  ::setenv("ATVOSS_HOST_MAX_THREADS", "1", 1);  // atvoss too: the threads knob holds only 1
  const auto args = host_bench_args(argc, argv, "bench_host_conv");
  if (!args) return 2;
  const int trials = args->trials, rounds = args->rounds;
  const bool quick = args->quick;
  const std::string& db = args->db;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const Target& target = host::describe_machine();
  const double peak = target.peak_flops(DType::float32) / target.ai_cores * 1e-9;
  std::printf("machine %s (%s), measured single-core peak %.1f GFLOP/s, tuning trials %d (db %s), %d rounds\n",
              target.name.c_str(), host::this_machine().model.c_str(), peak, trials, db.c_str(), rounds);
  side_by_side_header("layer", "/oneDNN");
  std::vector<Layer> layers = resnet50_3x3_layers();
  if (quick) layers = {layers[1], layers[3]};
  std::erase_if(layers, [&](const Layer& l) { return l.name.find(args->only) == std::string::npos; });
  std::vector<std::string> summary;
  for (const Layer& l : layers) {
    const Workload w = conv_workload(l);
    const double flops = w.flops();
    const auto at = atvoss_times(w, trials, db);
    pin_to_last_core();  // after tuning, which builds on every core
    Loaded def = load(w, at.def), tuned = load(w, at.tuned);
    // The fastest of 200 noisy measurements is partly luck (host_side_by_side.hpp).
    Finalist picked = remeasure_top(w, at);
    host::Operands o = host::make_operands(w, 1);
    const OneDnnConv best = onednn_conv(l, o, true, engine, stream);
    const OneDnnConv hwio = onednn_conv(l, o, false, engine, stream);
    std::vector<Timed> impls = {
        {"naive", [&] { naive(l, o.a.data(), o.b.data(), o.c.data()); }},
        {"atvoss default", [&] { def(); }},
        {"atvoss tuned (" + std::to_string(at.trials) + " trials)", [&] { tuned(); }},
        {"atvoss top-" + std::to_string(picked.candidates) + " re-measured", [&] { picked.kernel(); }},
        {"oneDNN", best.run},
        {"oneDNN, HWIO weights", hwio.run}};
    std::optional<Loaded> per_call = packing_per_call(picked.kernel);
    if (per_call) impls.push_back({"atvoss re-measured, packed per call", [&] { (*per_call)(); }});
    interleave(impls, rounds);
    const double ref_wall = median_of(impls[4].wall_us), ref_cpu = median_of(impls[4].cpu_us);
    const double runner[] = {NAN, at.default_us, at.tuned_us, NAN, NAN, NAN, NAN};
    for (std::size_t i = 0; i < impls.size(); ++i)
      side_by_side_row(l.name, impls[i].name, flops, runner[i], impls[i], peak, impls[4]);
    std::printf("%-16s oneDNN impl %s / %s; atvoss max rel err %.1e / %.1e\n", l.name.c_str(), best.impl.c_str(),
                hwio.impl.c_str(), def.max_rel_error, tuned.max_rel_error);
    std::printf("%-16s tuned schedule %s\n", l.name.c_str(), at.tuned.to_json().dump().c_str());
    std::printf("%-16s re-measured pick %s%s\n", l.name.c_str(), picked.schedule.to_json().dump().c_str(),
                picked.is_default ? " (the default)" : "");
    char line[200];
    std::snprintf(line, sizeof line, "%s: tuned %.2f (wall) %.2f (cpu); top re-measured %.2f (wall) %.2f (cpu)",
                  l.name.c_str(), ref_wall / median_of(impls[2].wall_us), ref_cpu / median_of(impls[2].cpu_us),
                  ref_wall / median_of(impls[3].wall_us), ref_cpu / median_of(impls[3].cpu_us));
    summary.push_back(line);
  }
  std::printf("tuned / oneDNN (goal >= 0.90):\n");
  for (const auto& line : summary) std::printf("  %s\n", line.c_str());
  return 0;
}
