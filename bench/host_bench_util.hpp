// Host bench util: what the host benchmarks share — a matmul shape and its workload, timing
// code that runs in their own process (libraries, scalar loops) by the kernel runner's rule
// (host/kernel_timing.hpp: a warm-up, inner iterations so that a repeat lasts >= 1 ms, the
// median of 5 repeats), and tuning one workload on this machine into a database.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <vector>

#include <string>

#include "core/json.hpp"
#include "core/measurement.hpp"
#include "core/workload.hpp"
#include "host/host_space.hpp"
#include "tuner/single_tune.hpp"

namespace atvoss::bench {

// The host benches' flags: --trials N (tuning trials), --rounds N (side-by-side rounds),
// --quick (one shape), --db FILE (where the tuning is stored).
struct HostBenchArgs {
  int trials = 200;
  int rounds = 15;
  bool quick = false;
  std::string db;
  std::string only;  // only the shapes whose name contains this (all when empty)
};

// The flags of bench `name` (its database defaults to <name>.db); nullopt after printing the
// usage on anything else.
inline std::optional<HostBenchArgs> host_bench_args(int argc, char** argv, const std::string& name) {
  HostBenchArgs a;
  a.db = name + ".db";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--trials" && i + 1 < argc) {
      a.trials = std::atoi(argv[++i]);
    } else if (flag == "--rounds" && i + 1 < argc) {
      a.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (flag == "--quick") {
      a.quick = true;
    } else if (flag == "--db" && i + 1 < argc) {
      a.db = argv[++i];
    } else if (flag == "--only" && i + 1 < argc) {
      a.only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--trials N] [--rounds N] [--quick] [--db FILE] [--only NAME]\n", name.c_str());
      return std::nullopt;
    }
  }
  return a;
}

// A matmul the host benches measure: C[m, n] = A[m, k] B[k, n], then the epilogue.
struct MatmulShape {
  std::string name;
  std::int64_t m = 0, n = 0, k = 0;
  std::vector<std::string> epilogue = {};
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

inline Workload matmul_workload(const MatmulShape& s, const std::string& dtype = "float32") {
  return Workload::from_json(Json{{"op", "matmul"},
                                  {"dtype", dtype},
                                  {"dims", {{"M", s.m}, {"N", s.n}, {"K", s.k}}},
                                  {"epilogue", Json(s.epilogue)}});
}

inline double time_us(const std::function<void()>& f) {
  auto once = [&](long inner) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < inner; ++i) f();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / double(inner);
  };
  const double first = once(1);
  const long inner = std::max(1L, long(std::ceil(1000.0 / std::max(first, 0.01))));
  once(inner);
  std::vector<double> r;
  for (int i = 0; i < 5; ++i) r.push_back(once(inner));
  return median(r);
}

// `trials` trials (seed 1) of w on --target host with the tuner's default strategy (what
// `atvoss-tune --target host` runs), stored in db.
inline tuner::SingleTuneOutcome tune_outcome_on_host(const Workload& w, int trials, const std::string& db) {
  tuner::SingleTuneSpec spec;
  spec.target = "host";
  spec.workload = w.to_json();
  spec.trials = trials;
  spec.db = db;
  spec.seed = 1;
  return tuner::tune_single(spec);
}

// The best schedule of tune_outcome_on_host, or the default.
inline Schedule tune_on_host(const Workload& w, int trials, const std::string& db) {
  return tune_outcome_on_host(w, trials, db)
      .result.best_schedule.value_or(host::default_schedule(w, host::this_machine()));
}

}  // namespace atvoss::bench
