// Helpers for the host tests: a fresh temporary directory per test and workloads from text.
#pragma once

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include <stdlib.h>

#include <gtest/gtest.h>

#include "core/json.hpp"
#include "core/workload.hpp"
#include "host/codegen.hpp"
#include "host/host_space.hpp"
#include "host/knob_values.hpp"
#include "host/measure.hpp"

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

// Fixed machines for the tests of the validity checks, whose verdicts depend on the registers
// and caches: an AVX2 core (16 ymm registers) and an AVX-512 one (32 zmm registers).
inline MachineInfo avx2_machine() {
  MachineInfo m;
  m.arch = "x86_64";
  m.simd_bytes = 32;
  m.vector_registers = 16;
  m.fma = true;
  m.l1d_bytes = 32 << 10;
  m.l2_bytes = 512 << 10;
  m.l3_bytes = 32 << 20;
  return m;
}

inline MachineInfo avx512_machine() {
  MachineInfo m = avx2_machine();
  m.simd_bytes = 64;
  m.vector_registers = 32;
  m.l1d_bytes = 48 << 10;
  m.l2_bytes = 1 << 20;
  return m;
}

// A schedule of w (K >= 512) that this machine's space rejects, whatever its registers and
// L1d: the largest register block and the deepest kc, packed (8 x 3 vectors spill 16 registers;
// with 32, a 512-deep panel of 3 vectors is 48 KiB at 8 lanes and 96 KiB at 16).
inline Schedule rejected_schedule(const Workload& w) {
  Schedule s = default_schedule(w, this_machine());
  s.set("async_copy_depth", 1);
  s.set("micro_m", 8);
  s.set("micro_n", 3 * this_machine().lanes());
  s.set("tile_k", 512);
  return s;
}

// One source built (into a fresh cache) and run through the real runner.
inline Measurement measure_source(const Workload& w, const std::string& source) {
  TempDir cache;
  HostConfig config;
  config.build.cache_dir = cache.str();
  return measure_sources({{w, source, 1, 3}}, config)[0];
}

// A row of a schedule table: a workload and knobs over its default schedule. Knobs are written
// for 8 lanes and any core count: micro_n (in floats) is scaled to this machine's lanes,
// "chunk" sets tile_n in vectors, threads is capped at what the space offers.
struct ScheduleCase {
  std::string workload;
  std::map<std::string, std::int64_t> knobs;
};

// m without AMX: the machine whose default is the dot-product kernels'.
inline MachineInfo without_amx(MachineInfo m) {
  std::erase_if(m.simd_flags, [](const std::string& f) { return f.starts_with("amx"); });
  return m;
}

// w's default on the dot-product kernels, a point of this machine's space: on a CPU with AMX,
// the default without tiles and amx_tiles 0.
inline Schedule dot_product_default(const Workload& w) {
  Schedule s = default_schedule(w, without_amx(this_machine()));
  const ScheduleSpace space = space_for(w, this_machine());
  for (const auto& k : space.knobs()) {
    if (k.name == "amx_tiles") s.set(k.name, 0);
  }
  return s;
}

// The table's register blocks are the dot-product kernels' unless a case turns AMX tiles on.
inline Schedule case_schedule(const Workload& w, const ScheduleCase& c) {
  Schedule s = c.knobs.count("amx_tiles") ? default_schedule(w, this_machine()) : dot_product_default(w);
  const std::int64_t lanes = this_machine().lanes();
  for (const auto& [k, v] : c.knobs) {
    if (k == "micro_n")
      s.set(k, v / 8 * lanes);
    else if (k == "chunk")
      s.set("tile_n", v * lanes);
    else if (k == "threads")
      s.set(k, std::min<std::int64_t>(v, thread_values(this_machine()).back()));
    else
      s.set(k, v);
  }
  return s;
}

// Builds every case (into a fresh cache), runs it through the real runner and expects each to
// be a point of its space and to match the reference.
inline void expect_every_case_computes_the_reference(const std::vector<ScheduleCase>& cases, std::uint64_t seed) {
  std::vector<Candidate> batch;
  for (const auto& c : cases) {
    const Workload w = workload(c.workload);
    const Schedule s = case_schedule(w, c);
    const Verdict v = space_for(w, this_machine()).check(s);
    EXPECT_TRUE(v.ok) << s.to_json().dump() << ": " << v.reason;
    if (v.ok) batch.push_back({w, s, seed, 3});
  }
  TempDir cache;
  HostConfig config;
  config.build.cache_dir = cache.str();
  config.run.timing.min_repeat_us = 50;
  const auto results = measure_candidates(batch, this_machine(), config);
  for (std::size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].status, Status::ok)
        << batch[i].schedule.to_json().dump() << " on " << batch[i].workload.label() << ": " << results[i].message;
    EXPECT_GT(results[i].time_us, 0);
    EXPECT_GT(results[i].profile.compile_us, 0);
  }
}

// Every knob of w's space changes the generated code: each other valid value of a knob, set
// on the default schedule, gives a different source below the schedule comment (which differs
// anyway); a knob with several values must have another valid one.
inline void expect_every_knob_changes_the_source(const Workload& w) {
  const ScheduleSpace space = space_for(w, this_machine());
  const Schedule base = dot_product_default(w);
  ASSERT_TRUE(space.check(base).ok) << space.check(base).reason;
  auto code = [&](const Schedule& s) {
    const std::string src = generate_source(w, s, this_machine());
    return src.substr(src.find("#include"));
  };
  const std::string text = code(base);
  for (const auto& k : space.knobs()) {
    if (k.name == "amx_tiles") continue;  // tiles take their own register blocks (low_precision_test.cpp)
    bool tried = false;
    for (auto v : k.values) {
      if (v == base.at(k.name)) continue;
      Schedule s = base;
      s.set(k.name, v);
      if (!space.check(s).ok) continue;
      tried = true;
      EXPECT_TRUE(code(s) != text) << w.label() << " " << k.name << "=" << v;  // not the sources: long
    }
    EXPECT_TRUE(tried || k.values.size() == 1) << w.label() << ": no other valid value of " << k.name;
  }
}

}  // namespace atvoss::host::testing

namespace atvoss::host::testing {

// The tests keep the machine's calibration and compiled kernels inside the build tree, never
// in the user's ~/.cache.
inline const bool kCacheInBuildTree = [] {
  ::setenv("XDG_CACHE_HOME", ATVOSS_BINARY_DIR "/test-cache", 1);
  return true;
}();

}  // namespace atvoss::host::testing
