// Shared fixtures for the db tests: small workloads, targets and records, and temporary
// directories that clean up after themselves.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "db/record.hpp"

namespace atvoss::db::testing {

inline Workload matmul(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& dtype = "float16",
                       std::vector<std::string> epilogue = {}) {
  return Workload::from_json(
      Json{{"op", "matmul"}, {"dtype", dtype}, {"dims", {{"M", m}, {"N", n}, {"K", k}}}, {"epilogue", epilogue}});
}

inline Schedule tiles(std::int64_t tm, std::int64_t tn, std::int64_t tk = 64) {
  return Schedule({{"tile_m", tm}, {"tile_n", tn}, {"tile_k", tk}, {"async_copy_depth", 2}});
}

inline Measurement ok_us(double t, std::vector<double> repeats = {}) {
  Measurement m;
  m.status = Status::ok;
  m.time_us = t;
  m.repeats = repeats.empty() ? std::vector<double>{t} : std::move(repeats);
  m.profile.compute_us = t / 2;
  m.profile.kernels = 1;
  return m;
}

inline Record record(const Workload& w, const TargetInfo& t, const Schedule& s, const Measurement& m) {
  Record r(w, t, s, m);
  r.worker = "test";
  r.job = "job-a";
  return r;
}

// A unique directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("atvoss-db-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace atvoss::db::testing
