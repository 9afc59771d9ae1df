// bench_host_threads: how the host's fp32 matmuls scale from one core to all of them, against
// oneDNN on the same cores. For each shape, the schedule tuned on one thread (--trials,
// default 48; $ATVOSS_HOST_MAX_THREADS=1 while tuning) runs with threads = 1 and threads = all
// physical cores (the same schedule, the mc blocks split among the threads), the schedule
// tuned with the threads knob free (a second database, FILE.all), and oneDNN's
// matmul runs with 1 and with all OpenMP threads; all four are timed side by side in
// interleaved rounds (bench/host_side_by_side.hpp), by wall clock, the process free to use every
// allowed CPU. Reports GFLOP/s, the scaling (1-thread time / all-thread time) of each, and
// the better atvoss on all cores over oneDNN on all cores.
// Usage: bench_host_threads [--trials N] [--rounds N] [--db FILE]
#include <omp.h>

#include <dnnl.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/host_side_by_side.hpp"
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

}  // namespace

int main(int argc, char** argv) {
  int trials = 48, rounds = 11;
  std::string db = "bench_host_threads.db";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--trials" && i + 1 < argc)
      trials = std::atoi(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::max(1, std::atoi(argv[++i]));
    else if (a == "--db" && i + 1 < argc)
      db = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_host_threads [--trials N] [--rounds N] [--db FILE]\n");
      return 2;
    }
  }
  const int cores = host::this_machine().physical_cores;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::printf("machine %s (%s), %d physical cores; tuning trials %d (db %s), %d rounds\n",
              host::describe_machine().name.c_str(), host::this_machine().model.c_str(), cores, trials, db.c_str(),
              rounds);
  const std::vector<Shape> shapes = {
      {"1024^3", 1024, 1024, 1024}, {"2048^3", 2048, 2048, 2048}, {"bert 128x3072x768", 128, 3072, 768}};
  std::vector<std::string> summary;
  for (const Shape& s : shapes) {
    const Workload w = matmul_workload(s);
    const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
    ::setenv("ATVOSS_HOST_MAX_THREADS", "1", 1);  // the one-thread schedule
    const Schedule one = tune_on_host(w, trials, db);
    ::setenv("ATVOSS_HOST_MAX_THREADS", std::to_string(cores).c_str(), 1);  // threads free
    const Schedule free = tune_on_host(w, trials, db + ".all");
    Schedule all = one;
    all.set("threads", cores);
    Loaded k1 = load(w, one), kn = load(w, all), kt = load(w, free);
    host::Operands o = host::make_operands(w, 1);
    const std::string n = std::to_string(cores);
    std::vector<Timed> impls = {{"atvoss 1 thread", [&] { k1(); }},
                                {"atvoss " + n + " threads", [&] { kn(); }},
                                {"atvoss tuned, threads free", [&] { kt(); }},
                                {"oneDNN 1 thread", onednn(s, o, engine, stream, 1)},
                                {"oneDNN " + n + " threads", onednn(s, o, engine, stream, cores)}};
    interleave(impls, rounds);
    for (const auto& t : impls) row(s.name, t, flops);
    std::printf("%-20s schedule %s (threads 1 and %d); max rel error %.1e / %.1e\n", s.name.c_str(),
                one.to_json().dump().c_str(), cores, k1.max_rel_error, kn.max_rel_error);
    std::printf("%-20s tuned with threads free: %s; max rel error %.1e\n", s.name.c_str(),
                free.to_json().dump().c_str(), kt.max_rel_error);
    char line[320];
    const double best_all = std::min(median_of(impls[1].wall_us), median_of(impls[2].wall_us));
    std::snprintf(line, sizeof line,
                  "%-20s scaling on %d cores: atvoss %.2fx (same schedule) %.2fx (threads tuned), oneDNN %.2fx; "
                  "atvoss best/oneDNN on %d cores %.2f",
                  s.name.c_str(), cores, median_of(impls[0].wall_us) / median_of(impls[1].wall_us),
                  median_of(impls[0].wall_us) / median_of(impls[2].wall_us),
                  median_of(impls[3].wall_us) / median_of(impls[4].wall_us), cores,
                  median_of(impls[4].wall_us) / best_all);
    summary.push_back(line);
  }
  std::printf("scaling (goal: >= 1.8x on 2 cores for large shapes):\n");
  for (const auto& l : summary) std::printf("  %s\n", l.c_str());
  return 0;
}
