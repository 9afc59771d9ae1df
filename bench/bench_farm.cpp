// Farm benchmarks on loopback. Everything runs in this process: an rpc::Coordinator
// (2 io threads), N rpc::Worker objects (each with its own TCP connection and slot
// threads) and one rpc::FarmClient — so every item crosses real sockets twice each way
// and pays the full frame/msgpack/dispatch cost, but no process start-up. Workers being
// threads of one process is the honest choice for dispatch cost: the coordinator's work
// per item is the same as with remote workers, and nothing is hidden in a pipe.
//   BM_Dispatch/W           items/s through the farm, W workers x 2 slots, simulator with
//                           noise on, no emulated latency (target: >= 50k items/s at W=4)
//   BM_DispatchNullMeasure/W  the same with a measure function that returns at once: the
//                           farm's own ceiling, without the simulator's CPU time
//   BM_DispatchLogged/store:S  BM_Dispatch at W=8 with the farm's result log on: store 0 an
//                           SQLite file, 1 the PostgreSQL database ATVOSS_BENCH_PG_URL
//                           (bench/db_postgres.sh). Every item is a new key; counters
//                           stored/submitted must be equal (nothing lost) (target: PostgreSQL
//                           >= 0.8x SQLite's items/s)
//   BM_SimulatorBaseline    simulate() alone on one thread: the measuring cost per item
//   BM_RoundTrip/B          submit-to-last-answer latency of a batch of B through 4 workers
//                           x 16 slots, p50/p99 counters
//                           (target: p50 < 1 ms for B=1)
//   BM_EmulatedScaling/W    --emulate-device-latency workers (5 ms compile), 1 slot each:
//                           items/s should grow ~linearly with W (target >= 0.9x from 1 to 8);
//                           up to 256 workers for docs/scaling.md
//   BM_QueuedItemMemory/N   resident memory per item waiting in the queue (no worker yet)
//   BM_ConnectionMemory/W   resident memory per connected, idle worker
// The memory figures are the growth of this process's resident set (/proc/self/statm):
// coordinator, workers and client together, so an upper bound on the coordinator's share.
// Run: build/bin/bench_farm [--benchmark_filter=...]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/error.hpp"
#include "db/tuning_database.hpp"
#include "rpc/coordinator.hpp"
#include "rpc/farm_client.hpp"
#include "rpc/log.hpp"
#include "rpc/worker.hpp"
#include "simulator/presets.hpp"
#include "simulator/simulator.hpp"

namespace {

using namespace atvoss;
using namespace std::chrono_literals;

// A coordinator with W in-process workers, torn down at the end of a benchmark run.
class Cluster {
 public:
  Cluster(int workers, int slots, bool emulate, rpc::MeasureFunction measure = {}, std::string db_path = "") {
    rpc::set_log_enabled(false);
    rpc::CoordinatorOptions o;
    o.port = 0;
    o.db_path = std::move(db_path);
    coordinator_ = std::make_unique<rpc::Coordinator>(o);
    coordinator_->start();
    for (int i = 0; i < workers; ++i) {
      rpc::WorkerOptions w;
      w.farm = rpc::Endpoint{"127.0.0.1", coordinator_->port()};
      w.targets = {simulator::preset("ascend910")};
      w.slots = slots;
      w.emulate_device_latency = emulate;
      w.compile_ms = 5.0;
      w.name = "bench-" + std::to_string(i);
      workers_.push_back(std::make_unique<rpc::Worker>(w, measure));
    }
    for (auto& w : workers_) threads_.emplace_back([raw = w.get()] { raw->run(); });
    for (int i = 0; i < 6000; ++i) {  // up to 60 s: hundreds of workers log in one by one
      if (coordinator_->stats().at("workers").size() == static_cast<std::size_t>(workers)) break;
      std::this_thread::sleep_for(10ms);
    }
    rpc::FarmClientOptions c;
    c.farm = rpc::Endpoint{"127.0.0.1", coordinator_->port()};
    client_ = std::make_unique<rpc::FarmClient>(c);
  }
  ~Cluster() {
    client_.reset();
    for (auto& w : workers_) w->stop();
    for (auto& t : threads_) t.join();
    workers_.clear();
    coordinator_.reset();
  }
  rpc::FarmClient& client() { return *client_; }
  rpc::Coordinator& coordinator() { return *coordinator_; }

 private:
  std::unique_ptr<rpc::Coordinator> coordinator_;
  std::vector<std::unique_ptr<rpc::Worker>> workers_;
  std::vector<std::thread> threads_;
  std::unique_ptr<rpc::FarmClient> client_;
};

// n requests over a few valid matmul schedules; distinct seeds keep them distinct items
// (no de-duplication), start makes every iteration's items new.
std::vector<rpc::FarmRequest> make_requests(std::size_t n, std::uint64_t start, std::int64_t family = 0) {
  static const Target target = simulator::preset("ascend910");
  static const Workload workload =
      Workload::from_json(Json{{"op", "matmul"}, {"dims", {{"M", 1024}, {"N", 1024}, {"K", 1024}}}});
  static const std::string target_key = target.key();
  static const Json workload_json = workload.to_json();
  static const std::vector<Json> schedules = [] {
    const ScheduleSpace space = simulator::space_for(workload, target);
    std::mt19937_64 rng(1);
    std::vector<Json> out;
    for (int i = 0; i < 1000 && out.size() < 32; ++i) {
      if (auto p = space.random_valid_point(rng)) {
        Json sch = space.schedule_at(*p).to_json();
        // Distinct, so that the logged benchmark's items are distinct database keys.
        if (std::find(out.begin(), out.end(), sch) == out.end()) out.push_back(std::move(sch));
      }
    }
    return out;
  }();
  std::vector<rpc::FarmRequest> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    Json w = workload_json;
    // family > 0: a workload per 32 items, so every item is a new database key.
    if (family > 0) {
      w["dims"]["M"] = 1024 + 16 * family;
      w["dims"]["N"] = 1024 + 16 * static_cast<std::int64_t>((start + i) / schedules.size());
    }
    out.push_back(rpc::FarmRequest{target_key, std::move(w), schedules[i % schedules.size()], 1, start + i});
  }
  return out;
}

void check_answers(benchmark::State& state, const std::vector<Measurement>& got) {
  for (const Measurement& m : got) {
    if (is_infrastructure_error(m.status)) {
      state.SkipWithError(("infrastructure error: " + m.message).c_str());
      return;
    }
  }
}

void run_throughput(benchmark::State& state, Cluster& cluster, std::size_t batch, std::int64_t family = 0) {
  std::uint64_t seed = 1;
  for (auto _ : state) {
    state.PauseTiming();
    const auto requests = make_requests(batch, seed, family);
    seed += batch;
    state.ResumeTiming();
    const auto got = cluster.client().measure(requests);
    state.PauseTiming();
    check_answers(state, got);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
}

// Slots per worker in the throughput runs: enough tasks in flight per connection that
// results and refills travel in batches instead of one round trip per item.
constexpr int kSlots = 16;

void BM_Dispatch(benchmark::State& state) {
  Cluster cluster(static_cast<int>(state.range(0)), kSlots, false);
  run_throughput(state, cluster, 4096);
}
BENCHMARK(BM_Dispatch)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

void BM_DispatchLogged(benchmark::State& state) {
  static std::atomic<std::int64_t> family{0};
  const std::int64_t mine = ++family;
  const char* url = std::getenv("ATVOSS_BENCH_PG_URL");
  if (state.range(0) == 1 && url == nullptr) {
    state.SkipWithError("set ATVOSS_BENCH_PG_URL (bench/db_postgres.sh does)");
    return;
  }
  const std::string dir = "/tmp/atvoss-bench-farm-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string db = state.range(0) == 1 ? std::string(url) : dir + "/farm.db";
  const std::int64_t before = db::TuningDatabase::open(db).stats().records;
  {
    Cluster cluster(8, kSlots, false, {}, db);
    run_throughput(state, cluster, 4096, mine);
  }  // the coordinator's log writer drains before it stops
  state.counters["submitted"] = static_cast<double>(state.iterations() * 4096);
  state.counters["stored"] = static_cast<double>(db::TuningDatabase::open(db).stats().records - before);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_DispatchLogged)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("store")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);

void BM_DispatchNullMeasure(benchmark::State& state) {
  const auto instant = [](const Target&, const Workload&, const Schedule&, int, std::uint64_t) {
    Measurement m;
    m.time_us = 1.0;
    m.repeats = {1.0};
    return m;
  };
  Cluster cluster(static_cast<int>(state.range(0)), kSlots, false, instant);
  run_throughput(state, cluster, 4096);
}
BENCHMARK(BM_DispatchNullMeasure)->Arg(1)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

// Baseline: the simulator alone on this thread, no farm. Dispatch throughput with W
// workers can exceed it only by using more cores.
void BM_SimulatorBaseline(benchmark::State& state) {
  const auto requests = make_requests(4096, 1);
  const Target target = simulator::preset("ascend910");
  const Workload workload = Workload::from_json(requests.front().workload);
  std::vector<Schedule> schedules;
  for (const auto& r : requests) schedules.push_back(Schedule::from_json(r.schedule));
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        simulator::simulate(target, workload, schedules[i % schedules.size()], simulator::SimOptions{0.02, 1, i}));
    ++i;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_SimulatorBaseline);

void BM_RoundTrip(benchmark::State& state) {
  Cluster cluster(4, kSlots, false);  // the dispatch set-up: a batch of 64 fits in its slots
  const auto batch = static_cast<std::size_t>(state.range(0));
  std::vector<double> samples;
  std::uint64_t seed = 1;
  for (auto _ : state) {
    const auto requests = make_requests(batch, seed);
    seed += batch;
    const auto start = std::chrono::steady_clock::now();
    const auto got = cluster.client().measure(requests);
    samples.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    check_answers(state, got);
  }
  std::sort(samples.begin(), samples.end());
  const auto at = [&](double q) {
    return samples[std::min(samples.size() - 1, static_cast<std::size_t>(q * samples.size()))];
  };
  state.counters["p50_us"] = at(0.50);
  state.counters["p99_us"] = at(0.99);
}
BENCHMARK(BM_RoundTrip)->Arg(1)->Arg(64)->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(1.0);

void BM_EmulatedScaling(benchmark::State& state) {
  const int workers = static_cast<int>(state.range(0));
  Cluster cluster(workers, 1, true);
  run_throughput(state, cluster, static_cast<std::size_t>(32 * workers));
  state.counters["workers"] = workers;
}
BENCHMARK(BM_EmulatedScaling)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->Arg(32)
    ->Arg(128)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

// This process's resident set in bytes.
double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  double pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

void wait_for_queue(rpc::Coordinator& c, std::size_t n) {
  for (int i = 0; i < 6000 && c.stats().at("queue_depth").get<std::size_t>() < n; ++i)
    std::this_thread::sleep_for(10ms);
}

// N items submitted while no worker is connected wait in the queue (one submit message: N is
// kept under the frame bound); then one worker with an
// instant measure function drains them so measure() returns.
void BM_QueuedItemMemory(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    Cluster cluster(0, 1, false);
    const auto requests = make_requests(n, 1);
    const double before = resident_bytes();
    std::thread submit([&] { cluster.client().measure(requests); });
    wait_for_queue(cluster.coordinator(), n);
    const double queued = resident_bytes();
    state.counters["bytes_per_item"] = (queued - before) / static_cast<double>(n);
    state.counters["queue_depth"] = cluster.coordinator().stats().at("queue_depth").get<double>();
    rpc::WorkerOptions w;
    w.farm = rpc::Endpoint{"127.0.0.1", cluster.coordinator().port()};
    w.targets = {simulator::preset("ascend910")};
    w.slots = 16;
    rpc::Worker drain(w, [](const Target&, const Workload&, const Schedule&, int, std::uint64_t) {
      Measurement m;
      m.time_us = 1.0;
      m.repeats = {1.0};
      return m;
    });
    std::thread worker([&] { drain.run(); });
    submit.join();
    drain.stop();
    worker.join();
  }
}
BENCHMARK(BM_QueuedItemMemory)->Arg(20000)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

void BM_ConnectionMemory(benchmark::State& state) {
  const int workers = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const double before = resident_bytes();
    Cluster cluster(workers, 1, true);
    state.counters["bytes_per_worker"] = (resident_bytes() - before) / workers;
    state.counters["workers"] = static_cast<double>(cluster.coordinator().stats().at("workers").size());
  }
}
BENCHMARK(BM_ConnectionMemory)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
