// bench_host_gemm: the host backend's sgemm against the libraries, one run side by side.
// For each shape (square 256 to 4096, the BERT-base GEMMs at M = 128): a naive loop (up to 2048^3:
// past it one call takes tens of seconds), the
// atvoss default schedule, atvoss tuned (--trials, default 200, the tuner's default search on the
// real runner; $ATVOSS_HOST_MAX_THREADS=1), the fastest of the default and the 5 best stored
// schedules re-measured, OpenBLAS sgemm, BLIS sgemm and oneDNN matmul, all on one thread, in
// GFLOP/s, as a fraction of the measured single-core peak (host/machine.hpp) and as a ratio to
// OpenBLAS. Then the fused GEMM+bias+GELU against OpenBLAS sgemm followed by a separate
// bias+GELU pass. Timing as bench/host_side_by_side.hpp says: the "runner" column is the
// tuner's own measurement; the others come from interleaved rounds (--rounds, default 15) in
// this process, pinned to one core, median window by wall clock and by thread CPU time.
// A database that already holds the trials is resumed, not tuned again.
// The last lines give the goals per shape: the better atvoss pick as a fraction of the
// peak and as a ratio to oneDNN.
// Usage: bench_host_gemm [--trials N] [--rounds N] [--quick] [--db FILE] [--only NAME]
#include <dlfcn.h>
#include <omp.h>

#include <dnnl.hpp>

extern "C" {
#include <blis.h>
}

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/host_side_by_side.hpp"
#include "host/operands.hpp"

namespace {

using namespace atvoss;
using namespace atvoss::bench;

using Shape = MatmulShape;

// The textbook loop nest in i-k-j order (rows of B streamed, so the compiler vectorises it):
// no blocking, no packing, no register tile.
void naive(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k) {
  for (std::int64_t i = 0; i < m; ++i) {
    float* crow = c + i * n;
    for (std::int64_t j = 0; j < n; ++j) crow[j] = 0;
    for (std::int64_t p = 0; p < k; ++p) {
      const float aip = a[i * k + p];
      const float* brow = b + p * n;
      for (std::int64_t j = 0; j < n; ++j) crow[j] += aip * brow[j];
    }
  }
}

void bias_gelu_pass(float* c, const float* bias, std::int64_t m, std::int64_t n) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) c[i * n + j] = float(host::gelu_reference(c[i * n + j] + bias[j]));
}

// OpenBLAS and BLIS both export cblas_sgemm; OpenBLAS is loaded by path with its own
// symbol scope so that "OpenBLAS" is OpenBLAS (BLIS is called through bli_sgemm).
struct OpenBlas {
  void* handle = ::dlopen(ATVOSS_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  template <typename F>
  F symbol(const char* name) const {
    void* p = handle ? ::dlsym(handle, name) : nullptr;
    if (!p) {
      std::fprintf(stderr, "cannot load %s from %s\n", name, ATVOSS_OPENBLAS_LIBRARY);
      std::exit(1);
    }
    return reinterpret_cast<F>(p);
  }
  // The CBLAS ABI: enums are ints (CblasRowMajor = 101, CblasNoTrans = 111), 32-bit indices.
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
  Sgemm sgemm = symbol<Sgemm>("cblas_sgemm");
  void (*set_threads)(int) = symbol<void (*)(int)>("openblas_set_num_threads");
  char* (*config)() = symbol<char* (*)()>("openblas_get_config");
};

struct Libraries {
  OpenBlas ob;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};

  void openblas(const Shape& s, host::Operands& o) const {
    ob.sgemm(101, 111, 111, int(s.m), int(s.n), int(s.k), 1.0f, o.a.data(), int(s.k), o.b.data(), int(s.n), 0.0f,
             o.c.data(), int(s.n));
  }
  void blis(const Shape& s, host::Operands& o) const {
    float one = 1, zero = 0;
    bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, s.m, s.n, s.k, &one, o.a.data(), s.k, 1, o.b.data(), s.n, 1, &zero,
              o.c.data(), s.n, 1);
  }
  std::function<void()> onednn(const Shape& s, host::Operands& o) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::memory::desc ad({s.m, s.k}, dt::f32, tag::ab), bd({s.k, s.n}, dt::f32, tag::ab),
        cd({s.m, s.n}, dt::f32, tag::ab);
    // oneDNN 2.x (Debian 12): an op descriptor, then the primitive descriptor.
    auto prim = std::make_shared<dnnl::matmul>(dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), engine));
    auto am = std::make_shared<dnnl::memory>(ad, engine, o.a.data());
    auto bm = std::make_shared<dnnl::memory>(bd, engine, o.b.data());
    auto cm = std::make_shared<dnnl::memory>(cd, engine, o.c.data());
    return [this, prim, am, bm, cm] {
      prim->execute(stream, {{DNNL_ARG_SRC, *am}, {DNNL_ARG_WEIGHTS, *bm}, {DNNL_ARG_DST, *cm}});
      stream.wait();
    };
  }
};

}  // namespace

// The better of the tuned and the re-measured pick, by wall clock: its fraction of the peak and
// its ratio to oneDNN.
std::string peak_line(const std::string& name, double flops, double peak, const Timed& tuned, const Timed& picked,
                      const Timed& onednn) {
  const double best = std::min(median_of(tuned.wall_us), median_of(picked.wall_us));
  char line[160];
  std::snprintf(line, sizeof line, "%s: %.2f of peak, %.2fx oneDNN", name.c_str(), flops / best * 1e-3 / peak,
                median_of(onednn.wall_us) / best);
  return line;
}

std::string ratio_line(const std::string& name, const Timed& tuned, const Timed& picked, const Timed& ref) {
  char line[200];
  std::snprintf(line, sizeof line, "%s: tuned %.2f (wall) %.2f (cpu); top re-measured %.2f (wall) %.2f (cpu)",
                name.c_str(), median_of(ref.wall_us) / median_of(tuned.wall_us),
                median_of(ref.cpu_us) / median_of(tuned.cpu_us), median_of(ref.wall_us) / median_of(picked.wall_us),
                median_of(ref.cpu_us) / median_of(picked.cpu_us));
  return line;
}

struct Summary {
  std::string vs_openblas, vs_peak;
};

// The implementations of one shape, timed side by side; returns tuned / OpenBLAS and
// re-measured / OpenBLAS by wall clock and by CPU time, and peak_line.
Summary compare(const Shape& s, Libraries& libs, int trials, int rounds, double peak, const std::string& db) {
  const Workload w = matmul_workload(s);
  host::Operands o = host::make_operands(w, 1);
  const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
  const auto at = atvoss_times(w, trials, db);
  pin_to_last_core();  // after tuning, which builds on every core
  Loaded def = load(w, at.def), tuned = load(w, at.tuned);
  Finalist picked = remeasure_top(w, at);
  auto onednn = libs.onednn(s, o);
  std::vector<Timed> impls = {
      {"naive", [&] { naive(o.a.data(), o.b.data(), o.c.data(), s.m, s.n, s.k); }},
      {"atvoss default", [&] { def(); }},
      {"atvoss tuned (" + std::to_string(at.trials) + " trials)", [&] { tuned(); }},
      {"atvoss top-" + std::to_string(picked.candidates) + " re-measured", [&] { picked.kernel(); }},
      {"OpenBLAS", [&] { libs.openblas(s, o); }},
      {"BLIS", [&] { libs.blis(s, o); }},
      {"oneDNN", onednn}};
  std::vector<double> runner = {NAN, at.default_us, at.tuned_us, NAN, NAN, NAN, NAN};
  if (flops > 2.0 * 2048 * 2048 * 2048) impls.erase(impls.begin()), runner.erase(runner.begin());
  const std::size_t first = impls.size() - 6;  // the default, past the naive loop where it runs
  interleave(impls, rounds);
  for (std::size_t i = 0; i < impls.size(); ++i)
    side_by_side_row(s.name, impls[i].name, flops, runner[i], impls[i], peak, impls[first + 3]);
  std::printf("%-22s tuned schedule %s\n", s.name.c_str(), at.tuned.to_json().dump().c_str());
  std::printf("%-22s re-measured pick %s%s\n", s.name.c_str(), picked.schedule.to_json().dump().c_str(),
              picked.is_default ? " (the default)" : "");
  const Timed &tuned_t = impls[first + 1], &picked_t = impls[first + 2];
  return {ratio_line(s.name, tuned_t, picked_t, impls[first + 3]),
          peak_line(s.name, flops, peak, tuned_t, picked_t, impls[first + 5])};
}

// GEMM + bias + GELU: the tuned fused kernel, the same schedule unfused, and OpenBLAS followed
// by a separate bias + GELU pass.
std::string compare_fused(Libraries& libs, int trials, int rounds, double peak, const std::string& db) {
  const Shape f{"ffn 128x3072x768+b+g", 128, 3072, 768, {"bias", "gelu"}};
  const Workload w = matmul_workload(f);
  host::Operands o = host::make_operands(w, 1);
  const double flops = 2.0 * double(f.m) * double(f.n) * double(f.k);
  const auto at = atvoss_times(w, trials, db);
  pin_to_last_core();
  Schedule unfused_schedule = at.tuned;
  unfused_schedule.set("fusion_level", 0);
  Loaded fused = load(w, at.tuned), unfused = load(w, unfused_schedule);
  Finalist picked = remeasure_top(w, at);
  std::vector<Timed> impls = {
      {"atvoss tuned fused", [&] { fused(); }},
      {"atvoss same, unfused", [&] { unfused(); }},
      {"atvoss top-" + std::to_string(picked.candidates) + " re-measured", [&] { picked.kernel(); }},
      {"OpenBLAS + pass", [&] {
         libs.openblas(f, o);
         bias_gelu_pass(o.c.data(), o.bias.data(), f.m, f.n);
       }}};
  interleave(impls, rounds);
  const double runner[] = {at.tuned_us, NAN, NAN, NAN};
  for (std::size_t i = 0; i < impls.size(); ++i)
    side_by_side_row(f.name, impls[i].name, flops, runner[i], impls[i], peak, impls[3]);
  std::printf("%-22s tuned schedule %s\n", f.name.c_str(), at.tuned.to_json().dump().c_str());
  return ratio_line(f.name, impls[0], impls[2], impls[3]);
}

int main(int argc, char** argv) {
  omp_set_num_threads(1);                       // BLIS and oneDNN (OpenMP builds) on one thread
  ::setenv("ATVOSS_HOST_MAX_THREADS", "1", 1);  // atvoss too: the threads knob holds only 1
  const auto args = host_bench_args(argc, argv, "bench_host_gemm");
  if (!args) return 2;
  const int trials = args->trials, rounds = args->rounds;
  const bool quick = args->quick;
  const std::string& db = args->db;
  Libraries libs;
  libs.ob.set_threads(1);
  bli_thread_set_num_threads(1);
  std::printf("OpenBLAS: %s (%s)\n", ATVOSS_OPENBLAS_LIBRARY, libs.ob.config());
  const Target& target = host::describe_machine();
  const double peak = target.peak_flops(DType::float32) / target.ai_cores * 1e-9;
  std::printf(
      "machine %s (%s), measured single-core peak %.1f GFLOP/s, bandwidth %.1f GB/s, tuning trials %d (db %s), %d "
      "rounds\n",
      target.name.c_str(), host::this_machine().model.c_str(), peak, target.hbm_bytes_per_second() * 1e-9, trials,
      db.c_str(), rounds);
  side_by_side_header("shape (MxNxK)", "/OpenBLAS");
  std::vector<Shape> shapes = {{"256^3", 256, 256, 256, {}},
                               {"512^3", 512, 512, 512, {}},
                               {"1024^3", 1024, 1024, 1024, {}},
                               {"2048^3", 2048, 2048, 2048, {}},
                               {"4096^3", 4096, 4096, 4096, {}},
                               {"bert 128x768x768", 128, 768, 768, {}},
                               {"bert 128x3072x768", 128, 3072, 768, {}},
                               {"bert 128x768x3072", 128, 768, 3072, {}}};
  if (quick) shapes = {shapes[0], shapes[5]};
  std::erase_if(shapes, [&](const Shape& s) { return s.name.find(args->only) == std::string::npos; });
  std::vector<Summary> summary;
  for (const Shape& s : shapes) summary.push_back(compare(s, libs, trials, rounds, peak, db));
  const bool fused = std::string("ffn 128x3072x768+b+g").find(args->only) != std::string::npos;
  if (fused) summary.push_back({compare_fused(libs, trials, rounds, peak, db), ""});
  std::printf(
      "tuned / OpenBLAS (goals: 1024^3 >= 0.80, BERT >= 1.0 on two of three, fused >= 1.1 of OpenBLAS + pass):\n");
  for (const auto& line : summary) std::printf("  %s\n", line.vs_openblas.c_str());
  std::printf("the better atvoss pick (goals: >= 0.85 of peak and >= 1.0x oneDNN on every square and BERT shape):\n");
  for (const auto& line : summary)
    if (!line.vs_peak.empty()) std::printf("  %s\n", line.vs_peak.c_str());
  return 0;
}
