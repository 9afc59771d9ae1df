// Host side by side: how the host benchmarks (bench_host_gemm, bench_host_conv) time several
// implementations of one workload fairly on a machine shared with other work. After tuning,
// the tuned kernels are loaded into the benchmark's own process from the compile cache and
// every implementation — atvoss kernels and library calls alike — is timed in interleaved
// rounds (each round one untimed call and one >= 1 ms window of each, in a new random order), so that a spell of
// load slows all of them alike; a figure is the median window, by wall clock and by this
// thread's CPU time. The tuner keeps its fastest of many noisy measurements, which is partly
// luck, so the default and the fastest stored schedules are re-measured the same way and the
// fastest by CPU time is reported as well.
#pragma once

#include <dlfcn.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/host_bench_util.hpp"
#include "core/measurement.hpp"
#include "db/tuning_database.hpp"
#include "host/builder.hpp"
#include "host/codegen.hpp"
#include "host/host_space.hpp"
#include "host/measure.hpp"
#include "host/operands.hpp"
#include "host/packed_weights.hpp"

namespace atvoss::bench {

// One timed implementation: `inner` calls per window, the windows' wall and CPU times.
struct Timed {
  Timed(std::string n, std::function<void()> f) : name(std::move(n)), run(std::move(f)) {}
  std::string name;
  std::function<void()> run;
  long inner = 1;
  std::vector<double> wall_us, cpu_us;  // per call
};

inline double thread_cpu_us() {
  timespec t;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e6 + double(t.tv_nsec) * 1e-3;
}

inline void window(Timed& t) {
  // Start each window on a fresh time slice: a thread that wakes from a sleep is rarely
  // preempted within the next few ms, whereas back-to-back windows would leave the slice's
  // end (and the wait for a core) to fall on the same implementation round after round.
  std::this_thread::sleep_for(std::chrono::microseconds(200));
  // One untimed call first: the other implementations of the round have just filled the
  // caches with their own operands, and a library is compared with warm caches.
  t.run();
  const double c0 = thread_cpu_us();
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < t.inner; ++i) t.run();
  const double wall = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  t.wall_us.push_back(wall / double(t.inner));
  t.cpu_us.push_back((thread_cpu_us() - c0) / double(t.inner));
}

// A warm-up call sizes each window to >= 1 ms; then `rounds` rounds of one window each, the
// implementations in a new random order every round.
inline void interleave(std::vector<Timed>& impls, int rounds) {
  for (auto& t : impls) {
    const auto t0 = std::chrono::steady_clock::now();
    t.run();
    const double one = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    t.inner = std::max(1L, long(std::ceil(1000.0 / std::max(one, 0.01))));
  }
  std::mt19937 rng(12345);
  std::vector<std::size_t> order(impls.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (int r = 0; r < rounds; ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t i : order) window(impls[i]);
  }
}

inline double median_of(std::vector<double> v) { return v.empty() ? NAN : median(v); }

inline void pin_to_last_core() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return;
  for (int c = CPU_SETSIZE - 1; c >= 0; --c) {
    if (CPU_ISSET(c, &set)) {
      CPU_ZERO(&set);
      CPU_SET(c, &set);
      ::sched_setaffinity(0, sizeof set, &set);
      return;
    }
  }
}

struct AtvossTimes {
  double default_us = 0, tuned_us = 0;  // the runner's medians
  Schedule def, tuned;
  std::vector<Schedule> top;  // the fastest stored schedules, fastest first
  int trials = 0;             // stored trials of the workload after the run
};

constexpr int kTop = 5;

// Tunes w (a database that already holds its trials is resumed, not tuned again) and measures
// the default and the tuned schedule through the runner, as the tuner does.
inline AtvossTimes atvoss_times(const Workload& w, int trials, const std::string& db) {
  AtvossTimes t;
  t.def = host::default_schedule(w, host::this_machine());
  t.tuned = t.def;
  if (trials > 0) {
    const auto outcome = tune_outcome_on_host(w, trials, db);
    t.tuned = outcome.result.best_schedule.value_or(t.def);
    t.trials = outcome.result.trials;
    const auto db_file = db::TuningDatabase::open(db);
    for (const auto& e : db_file.records().best_schedules(w.key(), outcome.target.key(), kTop))
      t.top.push_back(e.schedule);
  }
  host::HostConfig config;
  const auto m = host::measure_candidates({{w, t.def, 1, 5}, {w, t.tuned, 1, 5}}, host::this_machine(), config);
  t.default_us = m[0].ok() ? m[0].time_us : NAN;
  t.tuned_us = m[1].ok() ? m[1].time_us : NAN;
  return t;
}

// The compiled kernel of (w, s) from the compile cache (built already by the runs above),
// loaded into this process, with its own operands and, where the kernel packs its weights,
// those packed once (as the runner times it); checked against the reference once.
struct Loaded {
  host::KernelFn fn = nullptr;
  std::shared_ptr<host::Operands> ops;
  std::shared_ptr<host::PackedWeights> packed;
  host::AtvossArgs args{};
  double max_rel_error = NAN;
  void operator()() { fn(&args); }
};

inline Loaded load(const Workload& w, const Schedule& s) {
  const auto built = host::build_all({host::generate_source(w, s, host::this_machine())});
  if (built[0].status != Status::ok) {
    std::fprintf(stderr, "build failed: %s\n", built[0].message.c_str());
    std::exit(1);
  }
  void* h = ::dlopen(built[0].so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "%s\n", ::dlerror());
    std::exit(1);
  }
  Loaded l;
  l.fn = reinterpret_cast<host::KernelFn>(::dlsym(h, host::kKernelSymbol));
  l.ops = std::make_shared<host::Operands>(host::make_operands(w, 1));
  l.args = l.ops->args();
  l.packed = std::make_shared<host::PackedWeights>(host::PackedWeights::pack(h, l.args));
  if (*l.packed) l.args.qb_packed = l.packed->data();
  l.fn(&l.args);
  l.max_rel_error = host::max_relative_error(w, *l.ops, 1);
  return l;
}

// The same kernel packing its weights in every call (null when it has none packed once): the
// A/B of prepacking, in the same run.
inline std::optional<Loaded> packing_per_call(const Loaded& k) {
  if (!k.args.qb_packed) return std::nullopt;
  Loaded l = k;
  l.args.qb_packed = nullptr;
  return l;
}

// The default and the top stored schedules, loaded and timed side by side (7 rounds); returns
// the fastest by CPU time and its schedule.
struct Finalist {
  Loaded kernel;
  Schedule schedule;
  std::size_t candidates = 0;
  bool is_default = false;
};

inline Finalist remeasure_top(const Workload& w, const AtvossTimes& at) {
  std::vector<Schedule> finalists = {at.def};
  for (const auto& s : at.top) {
    if (std::find(finalists.begin(), finalists.end(), s) == finalists.end()) finalists.push_back(s);
  }
  std::vector<Loaded> loaded;
  std::vector<Timed> heats;
  for (const auto& s : finalists) loaded.push_back(load(w, s));
  for (auto& k : loaded) heats.emplace_back("", [&k] { k(); });
  interleave(heats, 7);
  std::size_t pick = 0;
  for (std::size_t i = 1; i < heats.size(); ++i) {
    if (median_of(heats[i].cpu_us) < median_of(heats[pick].cpu_us)) pick = i;
  }
  return {loaded[pick], finalists[pick], finalists.size(), pick == 0};
}

// One row of a side-by-side table: runner figure (or "-"), then wall and CPU GFLOP/s, each as
// a fraction of the peak and as a ratio to the reference implementation.
inline void side_by_side_row(const std::string& what, const std::string& impl, double flops, double runner_us,
                             const Timed& t, double peak, const Timed& ref) {
  auto gf = [&](double us) { return flops / us * 1e-3; };
  const double wall = median_of(t.wall_us), cpu = median_of(t.cpu_us);
  char runner[32] = "-";
  if (std::isfinite(runner_us)) std::snprintf(runner, sizeof runner, "%.1f", gf(runner_us));
  std::printf("%-22s %-26s %8s %8.1f %7.1f%% %6.2fx %8.1f %7.1f%% %6.2fx\n", what.c_str(), impl.c_str(), runner,
              gf(wall), 100 * gf(wall) / peak, median_of(ref.wall_us) / wall, gf(cpu), 100 * gf(cpu) / peak,
              median_of(ref.cpu_us) / cpu);
  std::fflush(stdout);
}

inline void side_by_side_header(const char* what, const char* ref) {
  std::printf("%-22s %-26s %8s %8s %8s %7s %8s %8s %7s\n", what, "implementation", "runner", "wall", "of peak", ref,
              "cpu", "of peak", ref);
  std::printf("%-22s %-26s %8s %8s %8s %7s %8s %8s %7s\n", "", "", "GFLOP/s", "GFLOP/s", "", "", "GFLOP/s", "", "");
}

}  // namespace atvoss::bench
