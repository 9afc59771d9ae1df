// Helpers for the host tests: a fresh temporary directory per test and workloads from text.
#pragma once

#include <filesystem>
#include <random>
#include <string>

#include <stdlib.h>

#include "core/json.hpp"
#include "core/workload.hpp"

namespace atvoss::host::testing {

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("atvoss-host-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline Workload workload(const std::string& text) { return Workload::from_json(parse_json(text, "workload")); }

}  // namespace atvoss::host::testing

namespace atvoss::host::testing {

// The tests keep the machine's calibration and compiled kernels inside the build tree, never
// in the user's ~/.cache.
inline const bool kCacheInBuildTree = [] {
  ::setenv("XDG_CACHE_HOME", ATVOSS_BINARY_DIR "/test-cache", 1);
  return true;
}();

}  // namespace atvoss::host::testing
