// Child process for the db reliability tests (tests/db/reliability_test.cpp): inserts
// batches and reports each one on stdout only after insert() returned, or reads in a loop.
//   db_child insert <db> <first_batch> <n_batches> <batch_size> [salt]
//   db_child read <db> <stop_file>
// Batch b holds batch_size records of workload matmul(64, 64, b + 1) on target "npu-rel",
// so the parent can check that a batch is whole by counting that workload's history. A salt
// shifts every time by salt/1000 us, so writers with different salts store different
// repeats for one key (the duplicate rule must keep them all).
// Exit 0 on success; on any error prints "error: ..." to stderr and exits 1.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "db/tuning_database.hpp"

namespace {

using namespace atvoss;
using namespace atvoss::db;

Workload batch_workload(long b) {
  return Workload::from_json(Json{{"op", "matmul"}, {"dims", {{"M", 64}, {"N", 64}, {"K", b + 1}}}});
}

int insert(const std::string& path, long first, long n, long size, long salt) {
  auto db = TuningDatabase::open(path);
  const TargetInfo target = TargetInfo::named("npu-rel");
  for (long b = first; b < first + n; ++b) {
    std::vector<Record> batch;
    for (long i = 0; i < size; ++i) {
      Measurement m;
      m.time_us = 1.0 + static_cast<double>(i) + static_cast<double>(salt) / 1000;
      m.repeats = {m.time_us};
      Record r(batch_workload(b), target, Schedule({{"tile_m", i + 1}, {"tile_n", 16}}), m);
      r.worker = "child";
      batch.push_back(std::move(r));
    }
    db.records().insert(batch);
    std::cout << "committed " << b << std::endl;  // endl: the parent must see it before a kill
  }
  return 0;
}

int read(const std::string& path, const std::string& stop_file) {
  auto db = TuningDatabase::open(path);
  const TargetInfo target = TargetInfo::named("npu-rel");
  long reads = 0;
  while (!std::filesystem::exists(stop_file)) {
    for (long b = 0; b < 2000; b += 97) db.records().best(batch_workload(b).key(), target.key, 5);
    db.stats();
    ++reads;
  }
  std::cout << "reads " << reads << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if ((args.size() == 5 || args.size() == 6) && args[0] == "insert") {
      return insert(args[1], std::stol(args[2]), std::stol(args[3]), std::stol(args[4]),
                    args.size() == 6 ? std::stol(args[5]) : 0);
    }
    if (args.size() == 3 && args[0] == "read") return read(args[1], args[2]);
    std::cerr << "usage: db_child insert <db> <first> <n> <size> [salt] | read <db> <stop_file>\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
