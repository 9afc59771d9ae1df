// A small made-up target for plan tests: buffer sizes round enough that the expected
// footprints and verdicts can be worked out by hand; and a matmul schedule from its knobs.
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

}  // namespace atvoss::lowering::testing
