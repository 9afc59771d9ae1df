// Synthetic training data for the cost-model tests: a hand-made 910-like target and a
// made-up but smooth "true" time over matmul knobs, so tests need no simulator.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "costmodel/cost_model.hpp"

namespace atvoss::costmodel::testing {

inline Target test_target() {
  Target t;
  t.name = "test910";
  t.ai_cores = 32;
  t.vector_cores = 32;
  t.clock_ghz = 1.0;
  t.l0a_bytes = t.l0b_bytes = 64 * 1024;
  t.l0c_bytes = 256 * 1024;
  t.l1_bytes = 1024 * 1024;
  t.ub_bytes = 256 * 1024;
  t.l2_bytes = 32 * 1024 * 1024;
  t.hbm_bytes_per_cycle = 1200;
  t.l2_bytes_per_cycle = 2400;
  t.mte2_bytes_per_cycle = 32;
  t.mte2_copy_start_cycles = 200;
  t.mte1_a_bytes_per_cycle = 512;
  t.mte1_b_bytes_per_cycle = 256;
  t.mte1_start_cycles = 26;
  t.fixpipe_bytes_per_cycle = 128;
  t.mte3_bytes_per_cycle = 128;
  t.launch_us = 5;
  return t;
}

inline Workload matmul(std::int64_t m, std::int64_t n, std::int64_t k) {
  return Workload::from_json(Json{{"op", "matmul"}, {"dims", {{"M", m}, {"N", n}, {"K", k}}}});
}

inline Schedule random_matmul_schedule(std::mt19937_64& rng) {
  static const std::int64_t tiles[] = {16, 32, 64, 128, 256};
  Schedule s;
  s.set("tile_m", tiles[rng() % 5]);
  s.set("tile_n", tiles[rng() % 5]);
  s.set("tile_k", tiles[rng() % 5]);
  s.set("k_steps", std::int64_t(1) << (rng() % 4));
  s.set("async_copy_depth", std::int64_t(1 + rng() % 4));
  s.set("tile_order", std::int64_t(rng() % 3));
  s.set("fusion_level", 0);
  return s;
}

// Made-up landscape: bigger square-ish tiles and deeper copies are faster, tile_k has
// a sweet spot at 64; scaled by the workload size so groups differ in scale.
inline double synthetic_time(const Workload& w, const Schedule& s) {
  const double lm = std::log2(double(s.at("tile_m"))), ln = std::log2(double(s.at("tile_n")));
  const double lk = std::log2(double(s.at("tile_k")));
  const double base = 100.0 / (lm + ln) + 8.0 * std::abs(lk - 6.0) + 6.0 / double(s.at("async_copy_depth")) +
                      2.0 * std::abs(lm - ln) + std::log2(double(s.at("k_steps")));
  return base * w.flops() / 1e9;
}

inline WorkloadGroup synthetic_group(const Workload& w, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  WorkloadGroup g{w, test_target(), {}};
  for (std::size_t i = 0; i < n; ++i) {
    Schedule s = random_matmul_schedule(rng);
    g.samples.push_back({s, Status::ok, synthetic_time(w, s)});
  }
  return g;
}

}  // namespace atvoss::costmodel::testing
