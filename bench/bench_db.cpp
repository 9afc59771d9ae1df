// Benchmarks of the tuning database and the runtime table:
//   BM_InsertBatch/64, /1024      records per second (items_per_second), file database in
//                                 WAL mode; /sync:1 = synchronous FULL (default, survives
//                                 power loss), /sync:0 = NORMAL (survives a process crash),
//                                 /sync:2 = ":memory:" (no file: the CPU cost alone)
//   BM_BestK_1M/k:1, /k:10        best(k) on a 1M-record file (10k workloads x 100
//                                 schedules), random workload per call; counters p50_us and
//                                 p99_us over all calls (wall clock). schedules_only:0 decodes
//                                 full Records (repeats, profile), :1 is best_schedules()
//   BM_InsertShared/store:S/threads:N  batch 64, durable (FULL / synchronous_commit on),
//                                 N writer threads with a connection each; store 0 is an
//                                 SQLite file, 1 the PostgreSQL database ATVOSS_BENCH_PG_URL
//   BM_BestK_1M_Postgres          BM_BestK_1M against ATVOSS_BENCH_PG_URL
//   (bench/db_postgres.sh starts a throwaway durable server and runs these side by side.)
//   BM_TableExact_10k             ScheduleTable::lookup of a present workload, 10k entries
//   BM_TableNearest_10k           lookup of an absent shape: nearest of 10k same-class entries
// Workloads are seeded (std::mt19937_64, seed 7), so runs are comparable.
// Run: build/bin/bench_db [--benchmark_filter=...]; ATVOSS_BENCH_DIR picks the scratch dir.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>

#include "db/table/schedule_table.hpp"
#include "db/tuning_database.hpp"

namespace {

using namespace atvoss;
using namespace atvoss::db;

std::filesystem::path scratch_dir() {
  const char* env = std::getenv("ATVOSS_BENCH_DIR");
  auto dir = std::filesystem::path(env != nullptr ? env : std::filesystem::temp_directory_path().string()) /
             ("atvoss-bench-db-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

Workload matmul(std::int64_t m, std::int64_t n, std::int64_t k) {
  return Workload::from_json(Json{{"op", "matmul"}, {"dims", {{"M", m}, {"N", n}, {"K", k}}}});
}

Record make_record(const Workload& w, const TargetInfo& t, std::int64_t i, double time) {
  Measurement m;
  m.time_us = time;
  m.repeats = {time, time * 1.01, time * 0.99};
  m.profile.compute_us = time / 2;
  Record r(w, t,
           Schedule({{"tile_m", 16 + i % 64},
                     {"tile_n", 16 + (i / 64) % 64},
                     {"tile_k", 16 + i / 4096},
                     {"async_copy_depth", 2}}),
           m);
  r.worker = "bench";
  return r;
}

void BM_InsertBatch(benchmark::State& state) {
  const auto batch_size = state.range(0);
  const auto dir = scratch_dir();
  const auto path = (dir / "insert.db").string();
  std::filesystem::remove(path);
  OpenOptions options;
  options.sync_every_commit = state.range(1) == 1;
  auto db = TuningDatabase::open(state.range(1) == 2 ? ":memory:" : path, options);
  const TargetInfo target = TargetInfo::named("bench-npu");
  std::int64_t counter = 0;
  std::vector<Workload> workloads;
  for (int i = 1; i <= 64; ++i) workloads.push_back(matmul(64 * i, 1024, 1024));
  std::vector<Record> batch;
  batch.reserve(static_cast<std::size_t>(batch_size));
  for (auto _ : state) {
    state.PauseTiming();
    batch.clear();  // freeing the caller's previous batch is not the database's cost
    // Like a tuner round: one batch holds candidates of one workload (a task).
    const Workload& w = workloads[static_cast<std::size_t>((counter / batch_size) % 64)];
    for (std::int64_t i = 0; i < batch_size; ++i, ++counter) {
      batch.push_back(make_record(w, target, counter, 10.0 + static_cast<double>(counter % 1000)));
    }
    state.ResumeTiming();
    db.records().insert(batch);
  }
  state.SetItemsProcessed(state.iterations() * batch_size);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_InsertBatch)
    ->ArgsProduct({{64, 1024}, {1, 0, 2}})
    ->ArgNames({"batch", "sync"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The PostgreSQL database of the server benchmarks, or empty (they then report an error).
std::string postgres_url() {
  const char* env = std::getenv("ATVOSS_BENCH_PG_URL");
  return env != nullptr ? env : "";
}

// Writers sharing one store, each with its own connection, as farms and jobs on several
// machines do. Every call (and thread) writes workloads of its own, so each insert is new.
void BM_InsertShared(benchmark::State& state) {
  static std::atomic<int> calls{0};
  const int unique = calls.fetch_add(1);
  const bool postgres = state.range(0) == 1;
  if (postgres && postgres_url().empty()) {
    state.SkipWithError("set ATVOSS_BENCH_PG_URL (bench/db_postgres.sh does)");
    return;
  }
  static const auto dir = scratch_dir();
  auto db = TuningDatabase::open(postgres ? postgres_url() : (dir / "shared.db").string());
  const TargetInfo target = TargetInfo::named("bench-npu");
  std::vector<Record> batch;
  std::int64_t counter = 0;
  for (auto _ : state) {
    state.PauseTiming();
    batch.clear();
    const Workload w = matmul(64 * (1 + (counter / 64) % 64), 1024 + unique, 1024);
    for (int i = 0; i < 64; ++i, ++counter) {
      batch.push_back(make_record(w, target, counter, 10.0 + static_cast<double>(counter % 1000)));
    }
    state.ResumeTiming();
    db.records().insert(batch);
  }
  state.SetItemsProcessed(state.iterations() * 64);
}
BENCHMARK(BM_InsertShared)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("store")
    ->Threads(1)
    ->Threads(4)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The 1M-record database is built once per process, in batches of 10k records.
struct MillionDb {
  std::filesystem::path dir = scratch_dir();
  std::string path = (dir / "million.db").string();
  std::vector<Workload> workloads;
  TargetInfo target = TargetInfo::named("bench-npu");
  double build_seconds = 0;

  explicit MillionDb(const std::string& url = "") {
    if (!url.empty()) path = url;
    if (url.empty()) std::filesystem::remove(path);
    auto db = TuningDatabase::open(path);
    std::mt19937_64 rng(7);
    for (int i = 0; i < 10000; ++i) workloads.push_back(matmul(16 * (1 + i % 100), 16 * (1 + i / 100), 512));
    const auto start = std::chrono::steady_clock::now();
    std::vector<Record> batch;
    for (std::size_t w = 0; w < workloads.size(); ++w) {
      for (int s = 0; s < 100; ++s) {
        batch.push_back(make_record(workloads[w], target, s, 1.0 + static_cast<double>(rng() % 100000) / 10));
      }
      if (batch.size() >= 10000) {
        db.records().insert(batch);
        batch.clear();
      }
    }
    if (!batch.empty()) db.records().insert(batch);
    build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  ~MillionDb() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

void best_k_1m(benchmark::State& state, const MillionDb& million) {
  auto db = TuningDatabase::open(million.path);
  std::mt19937_64 rng(7);
  std::vector<double> us;
  for (auto _ : state) {
    const auto& w = million.workloads[rng() % million.workloads.size()];
    const auto start = std::chrono::steady_clock::now();
    const int k = static_cast<int>(state.range(0));
    if (state.range(1) == 0) {
      auto best = db.records().best(w.key(), million.target.key, k);
      benchmark::DoNotOptimize(best);
    } else {
      auto best = db.records().best_schedules(w.key(), million.target.key, k);
      benchmark::DoNotOptimize(best);
    }
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[us.size() * 99 / 100];
  state.counters["records"] = 100.0 * static_cast<double>(million.workloads.size());
  state.counters["build_krec_per_s"] = 1e3 / million.build_seconds;
}

void BM_BestK_1M(benchmark::State& state) {
  static const MillionDb million;
  best_k_1m(state, million);
}

void BM_BestK_1M_Postgres(benchmark::State& state) {
  if (postgres_url().empty()) {
    state.SkipWithError("set ATVOSS_BENCH_PG_URL (bench/db_postgres.sh does)");
    return;
  }
  static const MillionDb million(postgres_url());
  best_k_1m(state, million);
}
BENCHMARK(BM_BestK_1M_Postgres)
    ->ArgsProduct({{1, 10}, {0, 1}})
    ->ArgNames({"k", "schedules_only"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BestK_1M)
    ->ArgsProduct({{1, 10}, {0, 1}})
    ->ArgNames({"k", "schedules_only"})
    ->Unit(benchmark::kMicrosecond);

std::shared_ptr<const table::ScheduleTable> table_10k(std::vector<Workload>& present) {
  std::mt19937_64 rng(7);
  std::vector<table::TableEntry> entries;
  const auto dim = [&] { return std::int64_t{1} << (4 + rng() % 9); };  // 16 .. 4096
  std::set<std::string> keys;
  while (entries.size() < 10000) {
    const Workload w = matmul(dim() + static_cast<std::int64_t>(rng() % 16), dim(), dim());
    if (!keys.insert(w.key()).second) continue;
    entries.push_back(table::TableEntry{w, Schedule({{"tile_m", 64}, {"tile_n", 64}}), 1.0});
  }
  for (const auto& e : entries) present.push_back(e.workload);
  table::TableHeader header;
  header.target_name = "bench-npu";
  return std::make_shared<const table::ScheduleTable>(header, std::move(entries));
}

void BM_TableExact_10k(benchmark::State& state) {
  std::vector<Workload> present;
  const auto table = table_10k(present);
  std::size_t i = 0;
  for (auto _ : state) {
    auto r = table->lookup(present[i++ % present.size()]);
    benchmark::DoNotOptimize(r);
  }
  state.counters["entries"] = static_cast<double>(table->entries().size());
}
BENCHMARK(BM_TableExact_10k)->Unit(benchmark::kNanosecond);

void BM_TableNearest_10k(benchmark::State& state) {
  std::vector<Workload> present;
  const auto table = table_10k(present);
  std::mt19937_64 rng(11);
  std::vector<Workload> absent;
  for (int i = 0; i < 1000; ++i) {
    absent.push_back(matmul(17 + static_cast<std::int64_t>(rng() % 5000), 17 + static_cast<std::int64_t>(rng() % 5000),
                            17 + static_cast<std::int64_t>(rng() % 5000)));
  }
  std::size_t i = 0, nearest = 0;
  for (auto _ : state) {
    auto r = table->lookup(absent[i++ % absent.size()]);
    nearest += r.kind == table::MatchKind::nearest;
    benchmark::DoNotOptimize(r);
  }
  state.counters["nearest_fraction"] = static_cast<double>(nearest) / static_cast<double>(i);
}
BENCHMARK(BM_TableNearest_10k)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
