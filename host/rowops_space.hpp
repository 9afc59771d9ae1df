// Row-ops space: the schedule knobs of the host's row ops — elementwise (C = A + B, then the
// epilogue), map (C = epilogue(A)), softmax and layernorm along the last axis (N) — their
// values, the one validity check and the default (docs/host-backend.md). Each kernel walks
// the M rows in blocks of tile_m and makes its passes over a block's rows one after another:
//   tile_m             rows per block: a block's rows are re-read by the next pass while in
//                      cache; the blocks are what the threads share out
//   tile_n             the vector chunk: columns per step of a row walk (a multiple of the
//                      SIMD lanes), one independent accumulator per vector of the chunk
//   k_steps            #pragma GCC unroll of the chunk loop
//   async_copy_depth   software prefetch: 1 none, d > 1 prefetches 512 (d - 1) bytes ahead
//   tile_order         softmax: 0 three passes (max; exp stored and summed; scale),
//                      1 two passes (online max and rescaled sum; exp and scale);
//                      layernorm: 0 mean, then centred variance, then normalise;
//                      1 shifted sum and sum of squares in one pass, then normalise
//   fusion_level       elementwise/map with an epilogue: ops fused into the main pass; the
//                      rest run as one pass each over the block's rows
//   threads            OpenMP threads sharing the row blocks (default 1)
// Valid when the chunk's accumulators and two temporaries fit the vector registers.
// Pure functions: thread-safe.
#pragma once

#include "core/schedule_space.hpp"
#include "core/workload.hpp"
#include "host/machine.hpp"

namespace atvoss::host {

// elementwise, map, softmax or layernorm (any dtype: host_space.hpp's supports() checks the rest).
bool is_row_op(const Workload& w);

// REQUIRES: supports(w) and is_row_op(w) (host_space.hpp).
ScheduleSpace rowops_space_for(const Workload& w, const MachineInfo& m);
Schedule rowops_default_schedule(const Workload& w, const MachineInfo& m);

// Per-vector accumulators of one pass of the op under tile_order (0 for elementwise and map).
int row_accumulators(const Workload& w, std::int64_t tile_order);

}  // namespace atvoss::host
