// bench_host_gemm: the host backend's sgemm against the libraries, one run side by side.
// For each shape (square 256/1024/2048, the BERT-base GEMMs at M = 128): a naive loop, the
// atvoss default schedule, atvoss tuned (--trials, default 200, the tuner's default search on the
// real runner; $ATVOSS_HOST_MAX_THREADS=1), OpenBLAS sgemm, BLIS sgemm and oneDNN matmul, all
// on one thread, in GFLOP/s,
// as a fraction of the measured single-core peak (host/machine.hpp) and as a ratio to
// OpenBLAS measured in the same run. Then the fused GEMM+bias+GELU against OpenBLAS sgemm
// followed by a separate bias+GELU pass. atvoss kernels are timed by atvoss-kernel-runner
// (median of repeats, each >= 1 ms); the libraries in this process the same way.
// Usage: bench_host_gemm [--trials N] [--quick] [--db FILE]
#include <dlfcn.h>
#include <omp.h>

#include <dnnl.hpp>

extern "C" {
#include <blis.h>
}

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/host_bench_util.hpp"
#include "core/measurement.hpp"
#include "host/host_space.hpp"
#include "host/measure.hpp"
#include "host/operands.hpp"
#include "tuner/single_tune.hpp"

namespace {

using namespace atvoss;

struct Shape {
  std::string name;
  std::int64_t m, n, k;
  std::vector<std::string> epilogue;
};

// Median of repeats of >= 1 ms each, after a warm-up: the runner's rule, in this process.
using bench::time_us;

Workload workload_of(const Shape& s) {
  Json eps = Json::array();
  for (const auto& e : s.epilogue) eps.push_back(e);
  return Workload::from_json(Json{{"op", "matmul"}, {"dtype", "float32"},
                                  {"dims", {{"M", s.m}, {"N", s.n}, {"K", s.k}}}, {"epilogue", eps}});
}

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
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                         float*, int);
  Sgemm sgemm = symbol<Sgemm>("cblas_sgemm");
  void (*set_threads)(int) = symbol<void (*)(int)>("openblas_set_num_threads");
  char* (*config)() = symbol<char* (*)()>("openblas_get_config");
};

struct Libraries {
  OpenBlas ob;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};

  void openblas(const Shape& s, host::Operands& o) const {
    ob.sgemm(101, 111, 111, int(s.m), int(s.n), int(s.k), 1.0f, o.a.data(),
                int(s.k), o.b.data(), int(s.n), 0.0f, o.c.data(), int(s.n));
  }
  void blis(const Shape& s, host::Operands& o) const {
    float one = 1, zero = 0;
    bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, s.m, s.n, s.k, &one, o.a.data(), s.k, 1, o.b.data(), s.n, 1,
              &zero, o.c.data(), s.n, 1);
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

// atvoss: the default and the tuned schedule, measured side by side through the runner.
struct AtvossTimes {
  double default_us = 0, tuned_us = 0;
  Schedule tuned;
};

AtvossTimes atvoss_times(const Workload& w, int trials, const std::string& db) {
  AtvossTimes t;
  t.tuned = bench::tune_on_host(w, trials, db);
  host::HostConfig config;
  const auto m = host::measure_candidates({{w, host::default_schedule(w, host::this_machine()), 1, 5},
                                           {w, t.tuned, 1, 5}},
                                          host::this_machine(), config);
  t.default_us = m[0].ok() ? m[0].time_us : NAN;
  t.tuned_us = m[1].ok() ? m[1].time_us : NAN;
  return t;
}

void row(const std::string& shape, const std::string& impl, double flops, double us, double peak, double blas_us) {
  const double gflops = flops / us * 1e-3;
  std::printf("%-22s %-18s %10.1f %9.1f%% %9.2fx %12.1f\n", shape.c_str(), impl.c_str(), gflops, 100 * gflops / peak,
              blas_us / us, us);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  omp_set_num_threads(1);  // BLIS and oneDNN (OpenMP builds) on one thread
  ::setenv("ATVOSS_HOST_MAX_THREADS", "1", 1);  // atvoss too: the threads knob holds only 1
  int trials = 200;
  bool quick = false;
  std::string db = "bench_host_gemm.db";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--trials" && i + 1 < argc) trials = std::atoi(argv[++i]);
    else if (a == "--quick") quick = true;
    else if (a == "--db" && i + 1 < argc) db = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_host_gemm [--trials N] [--quick] [--db FILE]\n");
      return 2;
    }
  }
  Libraries libs;
  libs.ob.set_threads(1);
  bli_thread_set_num_threads(1);
  std::printf("OpenBLAS: %s (%s)\n", ATVOSS_OPENBLAS_LIBRARY, libs.ob.config());
  const Target& target = host::describe_machine();
  const double peak = target.peak_flops(DType::float32) / target.ai_cores * 1e-9;
  std::printf("machine %s (%s), measured single-core peak %.1f GFLOP/s, bandwidth %.1f GB/s, tuning trials %d\n",
              target.name.c_str(), host::this_machine().model.c_str(), peak, target.hbm_bytes_per_second() * 1e-9,
              trials);
  std::printf("%-22s %-18s %10s %10s %10s %12s\n", "shape (MxNxK)", "implementation", "GFLOP/s", "of peak",
              "vs OpenBLAS", "time us");
  std::vector<Shape> shapes = {{"256^3", 256, 256, 256, {}},
                               {"1024^3", 1024, 1024, 1024, {}},
                               {"2048^3", 2048, 2048, 2048, {}},
                               {"bert 128x768x768", 128, 768, 768, {}},
                               {"bert 128x3072x768", 128, 3072, 768, {}},
                               {"bert 128x768x3072", 128, 768, 3072, {}}};
  if (quick) shapes = {shapes[0], shapes[3]};
  for (const Shape& s : shapes) {
    const Workload w = workload_of(s);
    host::Operands o = host::make_operands(w, 1);
    const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
    const double blas = time_us([&] { libs.openblas(s, o); });
    const auto at = atvoss_times(w, trials, db);
    const auto t0 = std::chrono::steady_clock::now();
    naive(o.a.data(), o.b.data(), o.c.data(), s.m, s.n, s.k);
    const double naive_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    row(s.name, "naive", flops, naive_us, peak, blas);
    row(s.name, "atvoss default", flops, at.default_us, peak, blas);
    row(s.name, "atvoss tuned", flops, at.tuned_us, peak, blas);
    row(s.name, "OpenBLAS", flops, blas, peak, blas);
    row(s.name, "BLIS", flops, time_us([&] { libs.blis(s, o); }), peak, blas);
    row(s.name, "oneDNN", flops, time_us(libs.onednn(s, o)), peak, blas);
    std::printf("%-22s tuned schedule %s\n", s.name.c_str(), at.tuned.to_json().dump().c_str());
  }
  // Fused GEMM + bias + GELU (BERT FFN-up) against OpenBLAS and a separate epilogue pass.
  const Shape f{"ffn 128x3072x768+bias+gelu", 128, 3072, 768, {"bias", "gelu"}};
  const Workload w = workload_of(f);
  host::Operands o = host::make_operands(w, 1);
  const double flops = 2.0 * double(f.m) * double(f.n) * double(f.k);
  const double blas_pass = time_us([&] {
    libs.openblas(f, o);
    bias_gelu_pass(o.c.data(), o.bias.data(), f.m, f.n);
  });
  const auto at = atvoss_times(w, trials, db);
  Schedule unfused = at.tuned;
  unfused.set("fusion_level", 0);
  const auto m = host::measure_candidates({{w, unfused, 1, 5}}, host::this_machine(), host::HostConfig{});
  row(f.name, "atvoss tuned fused", flops, at.tuned_us, peak, blas_pass);
  row(f.name, "atvoss same,unfused", flops, m[0].ok() ? m[0].time_us : NAN, peak, blas_pass);
  row(f.name, "OpenBLAS + pass", flops, blas_pass, peak, blas_pass);
  std::printf("%-22s tuned schedule %s\n", f.name.c_str(), at.tuned.to_json().dump().c_str());
  return 0;
}
