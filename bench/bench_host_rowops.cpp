// bench_host_rowops: the host backend's row ops (softmax, layernorm, elementwise add, map
// gelu at BERT-base sizes, sequence 128) and the threads knob. For each shape: a scalar loop
// compiled into this program, the atvoss default schedule, atvoss tuned (--trials, default 64,
// the tuner's default search on the real runner, threads capped at 1 as the gemm benchmark does),
// and the tuned schedule again with every thread count of this machine, in GB/s of compulsory
// traffic (inputs read and output written once) and as a fraction of the measured single-core
// bandwidth. Then the default sgemm schedule at 512^3 with each thread count, in GFLOP/s.
// atvoss kernels are timed by atvoss-kernel-runner; the scalar loop in this process the same
// way (median of 5 repeats of >= 1 ms after a warm-up).
// Usage: bench_host_rowops [--trials N] [--db FILE]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/host_bench_util.hpp"
#include "core/measurement.hpp"
#include "host/host_space.hpp"
#include "host/knob_values.hpp"
#include "host/measure.hpp"
#include "host/operands.hpp"

namespace {

using namespace atvoss;

using bench::time_us;

// The textbook loops, one row at a time (what a framework's reference kernel does).
void scalar(const Workload& w, host::Operands& o) {
  const long m = long(w.dim("M")), n = long(w.dim("N"));
  for (long i = 0; i < m; ++i) {
    const float* x = o.a.data() + i * n;
    float* y = o.c.data() + i * n;
    if (w.op() == "softmax") {
      float mx = x[0], sum = 0;
      for (long j = 0; j < n; ++j) mx = std::max(mx, x[j]);
      for (long j = 0; j < n; ++j) sum += (y[j] = std::exp(x[j] - mx));
      for (long j = 0; j < n; ++j) y[j] /= sum;
    } else if (w.op() == "layernorm") {
      float mean = 0, var = 0;
      for (long j = 0; j < n; ++j) mean += x[j];
      mean /= float(n);
      for (long j = 0; j < n; ++j) var += (x[j] - mean) * (x[j] - mean);
      const float rstd = 1.0f / std::sqrt(var / float(n) + 1e-5f);
      for (long j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd * o.scale[j] + o.shift[j];
    } else if (w.op() == "elementwise") {
      for (long j = 0; j < n; ++j) y[j] = x[j] + o.b[i * n + j];
    } else {
      for (long j = 0; j < n; ++j) y[j] = float(host::gelu_reference(x[j]));
    }
  }
}

double atvoss_us(const Workload& w, const Schedule& s) {
  const auto m = host::measure_candidates({{w, s, 1, 5}}, host::this_machine(), host::HostConfig{});
  return m[0].ok() ? m[0].time_us : NAN;
}

void row(const std::string& shape, const std::string& impl, double bytes, double us, double bandwidth) {
  const double gbs = bytes / us * 1e-3;
  std::printf("%-26s %-24s %9.1f %9.0f%% %12.1f\n", shape.c_str(), impl.c_str(), gbs, 100 * gbs / bandwidth, us);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 64;
  std::string db = "bench_host_rowops.db";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--trials" && i + 1 < argc)
      trials = std::atoi(argv[++i]);
    else if (a == "--db" && i + 1 < argc)
      db = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_host_rowops [--trials N] [--db FILE]\n");
      return 2;
    }
  }
  const Target& target = host::describe_machine();
  const double bandwidth = target.hbm_bytes_per_second() * 1e-9;
  const std::vector<std::int64_t> threads = host::thread_values(host::this_machine());
  std::printf("machine %s (%s), measured single-core bandwidth %.1f GB/s, tuning trials %d\n", target.name.c_str(),
              host::this_machine().model.c_str(), bandwidth, trials);
  std::printf("%-26s %-24s %9s %10s %12s\n", "workload", "implementation", "GB/s", "of bw", "time us");
  const std::vector<std::string> workloads = {
      R"({"op":"softmax","dtype":"float32","dims":{"M":1536,"N":128}})",
      R"({"op":"softmax","dtype":"float32","dims":{"M":64,"N":4096}})",
      R"({"op":"layernorm","dtype":"float32","dims":{"M":128,"N":768}})",
      R"({"op":"elementwise","dtype":"float32","dims":{"M":128,"N":768}})",
      R"({"op":"map","dtype":"float32","dims":{"M":128,"N":3072},"epilogue":["gelu"]})"};
  for (const auto& text : workloads) {
    const Workload w = Workload::from_json(parse_json(text, "workload"));
    const std::string name = w.label();
    const double bytes = w.compulsory_bytes();
    host::Operands o = host::make_operands(w, 1);
    row(name, "scalar loop", bytes, time_us([&] { scalar(w, o); }), bandwidth);
    row(name, "atvoss default", bytes, atvoss_us(w, host::default_schedule(w, host::this_machine())), bandwidth);
    ::setenv("ATVOSS_HOST_MAX_THREADS", "1", 1);
    Schedule tuned = bench::tune_on_host(w, trials, db);
    ::unsetenv("ATVOSS_HOST_MAX_THREADS");
    std::printf("%-26s tuned schedule %s\n", name.c_str(), tuned.to_json().dump().c_str());
    for (std::int64_t t : threads) {
      tuned.set("threads", t);
      row(name, "atvoss tuned, " + std::to_string(t) + " thread" + (t > 1 ? "s" : ""), bytes, atvoss_us(w, tuned),
          bandwidth);
    }
  }
  const Workload mm = Workload::from_json(
      parse_json(R"({"op":"matmul","dtype":"float32","dims":{"M":512,"N":512,"K":512}})", "workload"));
  Schedule s = host::default_schedule(mm, host::this_machine());
  for (std::int64_t t : threads) {
    s.set("threads", t);
    const double us = atvoss_us(mm, s);
    std::printf("%-26s %-24s %9.1f GFLOP/s %12.1f\n", "matmul 512^3",
                ("default, " + std::to_string(t) + " threads").c_str(), mm.flops() / us * 1e-3, us);
  }
  return 0;
}
