// The runtime tests' table: a host table for this machine (or another CPU's name) with
//   matmul 48x40x64 fp32            tuned schedule kTuned (differs from the default in most knobs)
//   matmul 300x300x600 fp32 +relu   a schedule with tile_k 512, which shapes with K < 257 lack
//   matmul 64x64x512 fp32 +gelu     a schedule this machine's space rejects (8 x 3 vectors of
//                                   accumulators spill 16 registers; with 32, the 512-deep
//                                   panel of B overflows L1d)
// written through table::make_table_json, as `atvoss-db export-table` writes it.
// Shared by the gtest suite and helpers/make_table.cpp (the C test's fixture).
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"
#include "db/table/schedule_table.hpp"
#include "host/machine.hpp"

namespace atvoss::runtime::testing {

inline Workload workload(const std::string& text) { return Workload::from_json(parse_json(text, "workload")); }

inline const char* kTunedWorkload = R"({"op":"matmul","dtype":"float32","dims":{"M":48,"N":40,"K":64}})";
inline const char* kLargeReluWorkload =
    R"({"op":"matmul","dtype":"float32","dims":{"M":300,"N":300,"K":600},"epilogue":["relu"]})";

// micro_n is one vector of this machine's lanes.
inline Schedule tuned_schedule(const host::MachineInfo& m) {
  return Schedule({{"micro_m", 4},
                   {"micro_n", m.lanes()},
                   {"tile_m", 48},
                   {"tile_n", 256},
                   {"tile_k", 64},
                   {"k_steps", 1},
                   {"async_copy_depth", 2},
                   {"tile_order", 1},
                   {"fusion_level", 0},
                   {"threads", 1}});
}

// Written before the threads knob existed (no "threads"), as an old table's entry is.
inline Schedule large_relu_schedule(const host::MachineInfo& m) {
  return Schedule({{"micro_m", 4},
                   {"micro_n", m.lanes()},
                   {"tile_m", 48},
                   {"tile_n", 256},
                   {"tile_k", 512},
                   {"k_steps", 1},
                   {"async_copy_depth", 1},
                   {"tile_order", 0},
                   {"fusion_level", 1}});
}

inline const char* kBadGeluWorkload =
    R"({"op":"matmul","dtype":"float32","dims":{"M":64,"N":64,"K":512},"epilogue":["gelu"]})";

inline Schedule rejected_schedule(const host::MachineInfo& m) {
  return Schedule({{"micro_m", 8},
                   {"micro_n", 3 * m.lanes()},
                   {"tile_m", 48},
                   {"tile_n", 256},
                   {"tile_k", 512},
                   {"k_steps", 1},
                   {"async_copy_depth", 1},
                   {"tile_order", 0},
                   {"fusion_level", 1},
                   {"threads", 1}});
}

inline void write_table(const std::string& path, const std::string& target_name,
                        const std::vector<table::TableEntry>& more = {}) {
  const host::MachineInfo& m = host::this_machine();
  table::TableHeader h;
  h.target_key = "0123456789abcdef";
  h.target_name = target_name;
  h.created_at = "2026-11-30T00:00:00Z";
  h.tool_version = "test";
  std::vector<table::TableEntry> entries = {{workload(kTunedWorkload), tuned_schedule(m), 12.5},
                                            {workload(kLargeReluWorkload), large_relu_schedule(m), 900.0},
                                            {workload(kBadGeluWorkload), rejected_schedule(m), 40.0}};
  entries.insert(entries.end(), more.begin(), more.end());
  std::ofstream f(path);
  f << table::make_table_json(h, entries).dump();
  if (!f) throw Error(ErrorKind::io, "cannot write " + path);
}

}  // namespace atvoss::runtime::testing
