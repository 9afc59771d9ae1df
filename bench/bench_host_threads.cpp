// bench_host_threads: how the host's fp32 matmuls and convolutions scale from one core to all of
// them, against oneDNN on the same cores (matmuls: 1024^3, 2048^3, BERT 128x3072x768; convs:
// ResNet-50's 56x56 and 14x14 3x3 layers, bench/resnet_conv.hpp). For each shape, the schedule tuned on one thread
// (--trials, default 48; $ATVOSS_HOST_MAX_THREADS=1 while tuning) runs with threads = 1 and threads = all physical
// cores (the same schedule, its output shared among the threads), the schedule tuned with the threads knob free (a
// second database, FILE.all), and oneDNN's primitive runs with 1 and with all OpenMP threads; all four are timed side
// by side in interleaved rounds (bench/host_side_by_side.hpp), by wall clock, the process free to use every allowed
// CPU. Reports GFLOP/s, the scaling (1-thread time / all-thread time) of each, and the better atvoss on all cores over
// oneDNN on all cores. Usage: bench_host_threads [--trials N] [--rounds N] [--db FILE]
#include <omp.h>

#include <dnnl.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/host_side_by_side.hpp"
#include "bench/resnet_conv.hpp"
#include "host/operands.hpp"

namespace {

using namespace atvoss;
using namespace atvoss::bench;

using Shape = MatmulShape;

// oneDNN's fp32 matmul on o's operands, on `threads` OpenMP threads.
std::function<void()> onednn(const Shape& s, host::Operands& o, dnnl::engine& engine, dnnl::stream& stream,
                             int threads) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::memory::desc ad({s.m, s.k}, dt::f32, tag::ab), bd({s.k, s.n}, dt::f32, tag::ab),
      cd({s.m, s.n}, dt::f32, tag::ab);
  // oneDNN fixes a primitive's thread count when it is created: create it on `threads`.
  omp_set_num_threads(threads);
  auto prim = std::make_shared<dnnl::matmul>(dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), engine));
  auto am = std::make_shared<dnnl::memory>(ad, engine, o.a.data());
  auto bm = std::make_shared<dnnl::memory>(bd, engine, o.b.data());
  auto cm = std::make_shared<dnnl::memory>(cd, engine, o.c.data());
  return [&stream, prim, am, bm, cm, threads] {
    omp_set_num_threads(threads);
    prim->execute(stream, {{DNNL_ARG_SRC, *am}, {DNNL_ARG_WEIGHTS, *bm}, {DNNL_ARG_DST, *cm}});
    stream.wait();
  };
}

void row(const std::string& shape, const Timed& t, double flops) {
  std::printf("%-20s %-28s %9.1f GFLOP/s\n", shape.c_str(), t.name.c_str(), flops / median_of(t.wall_us) * 1e-3);
}

// One case: a workload and oneDNN's primitive on its operands for a thread count.
struct Case {
  std::string name;
  Workload w;
  std::function<std::function<void()>(host::Operands&, int threads)> onednn;
};

// Tunes w on one thread and with threads free, times the five side by side, prints them and
// returns the scaling line.
std::string scaling(const Case& c, int trials, int rounds, const std::string& db, int cores) {
  const double flops = c.w.flops();
  ::setenv("ATVOSS_HOST_MAX_THREADS", "1", 1);  // the one-thread schedule
  const Schedule one = tune_on_host(c.w, trials, db);
  ::setenv("ATVOSS_HOST_MAX_THREADS", std::to_string(cores).c_str(), 1);  // threads free
  const Schedule free = tune_on_host(c.w, trials, db + ".all");
  Schedule all = one;
  all.set("threads", cores);
  Loaded k1 = load(c.w, one), kn = load(c.w, all), kt = load(c.w, free);
  host::Operands o = host::make_operands(c.w, 1);
  const std::string n = std::to_string(cores);
  std::vector<Timed> impls = {{"atvoss 1 thread", [&] { k1(); }},
                              {"atvoss " + n + " threads", [&] { kn(); }},
                              {"atvoss tuned, threads free", [&] { kt(); }},
                              {"oneDNN 1 thread", c.onednn(o, 1)},
                              {"oneDNN " + n + " threads", c.onednn(o, cores)}};
  interleave(impls, rounds);
  for (const auto& t : impls) row(c.name, t, flops);
  std::printf("%-20s schedule %s (threads 1 and %d); max rel error %.1e / %.1e\n", c.name.c_str(),
              one.to_json().dump().c_str(), cores, k1.max_rel_error, kn.max_rel_error);
  std::printf("%-20s tuned with threads free: %s; max rel error %.1e\n", c.name.c_str(), free.to_json().dump().c_str(),
              kt.max_rel_error);
  char line[320];
  const double best_all = std::min(median_of(impls[1].wall_us), median_of(impls[2].wall_us));
  std::snprintf(line, sizeof line,
                "%-20s scaling on %d cores: atvoss %.2fx (same schedule) %.2fx (threads tuned), oneDNN %.2fx; "
                "atvoss best/oneDNN on %d cores %.2f",
                c.name.c_str(), cores, median_of(impls[0].wall_us) / median_of(impls[1].wall_us),
                median_of(impls[0].wall_us) / median_of(impls[2].wall_us),
                median_of(impls[3].wall_us) / median_of(impls[4].wall_us), cores,
                median_of(impls[4].wall_us) / best_all);
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 48, rounds = 11;
  std::string db = "bench_host_threads.db", only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--trials" && i + 1 < argc)
      trials = std::atoi(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::max(1, std::atoi(argv[++i]));
    else if (a == "--db" && i + 1 < argc)
      db = argv[++i];
    else if (a == "--only" && i + 1 < argc)
      only = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_host_threads [--trials N] [--rounds N] [--db FILE] [--only NAME]\n");
      return 2;
    }
  }
  const int cores = host::this_machine().physical_cores;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::printf("machine %s (%s), %d physical cores; tuning trials %d (db %s), %d rounds\n",
              host::describe_machine().name.c_str(), host::this_machine().model.c_str(), cores, trials, db.c_str(),
              rounds);
  std::vector<Case> cases;
  for (const Shape& s : std::vector<Shape>{
           {"1024^3", 1024, 1024, 1024}, {"2048^3", 2048, 2048, 2048}, {"bert 128x3072x768", 128, 3072, 768}}) {
    cases.push_back({s.name, matmul_workload(s), [&engine, &stream, s](host::Operands& o, int threads) {
                       return onednn(s, o, engine, stream, threads);
                     }});
  }
  for (const ConvLayer& l : resnet50_3x3_layers()) {
    if (l.hw != 56 && l.hw != 14) continue;
    cases.push_back({"conv " + l.name, conv_workload(l), [&engine, &stream, l](host::Operands& o, int threads) {
                       omp_set_num_threads(threads);  // oneDNN fixes the count when it makes the primitive
                       std::function<void()> run = onednn_conv(l, o, true, engine, stream).run;
                       return std::function<void()>([run, threads] {
                         omp_set_num_threads(threads);
                         run();
                       });
                     }});
  }
  std::erase_if(cases, [&](const Case& c) { return c.name.find(only) == std::string::npos; });
  std::vector<std::string> summary;
  for (const Case& c : cases) summary.push_back(scaling(c, trials, rounds, db, cores));
  std::printf("scaling (goal: >= 1.8x on 2 cores for large shapes):\n");
  for (const auto& l : summary) std::printf("  %s\n", l.c_str());
  return 0;
}
