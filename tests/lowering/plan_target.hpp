// A small made-up target for plan tests: buffer sizes round enough that the expected
// footprints and verdicts can be worked out by hand; and matmul and conv2d schedules.
#pragma once

#include "core/schedule.hpp"
#include "core/target.hpp"

namespace atvoss::lowering::testing {

inline Target small_target() {
  Target t;
  t.name = "plan-test";
  t.ai_cores = 4;
  t.vector_cores = 4;
  t.l0a_bytes = t.l0b_bytes = 64 * 1024;
  t.l0c_bytes = 256 * 1024;
  t.l1_bytes = 1024 * 1024;
  t.ub_bytes = 256 * 1024;
  t.l2_bytes = 8 * 1024 * 1024;
  t.fixpipe_bytes_per_cycle = 64;
  return t;
}

inline Schedule matmul_schedule(int tm, int tn, int tk, int ks, int depth, int order, int fusion = 0) {
  return Schedule({{"tile_m", tm},
                   {"tile_n", tn},
                   {"tile_k", tk},
                   {"k_steps", ks},
                   {"async_copy_depth", depth},
                   {"tile_order", order},
                   {"fusion_level", fusion}});
}

// A conv2d schedule with a tile_h x tile_w x 64 output block in `layout` (lowering/layout.hpp).
inline Schedule conv_schedule(int layout, int tile_h = 14, int tile_w = 14) {
  return Schedule({{"tile_h", tile_h},
                   {"tile_w", tile_w},
                   {"tile_n", 64},
                   {"tile_k", 64},
                   {"k_steps", 1},
                   {"async_copy_depth", 2},
                   {"tile_order", 0},
                   {"fusion_level", 0},
                   {"layout", layout}});
}

}  // namespace atvoss::lowering::testing
