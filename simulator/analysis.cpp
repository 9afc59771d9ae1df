#include "simulator/analysis.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace atvoss::simulator {
namespace {

std::string dma_hint(const Profile& p, const Schedule& s) {
  if (s.get_or("async_copy_depth", 2) == 1) {
    return "transfers do not overlap compute: raise async_copy_depth to 2 (double buffering)";
  }
  if (s.has("k_steps") && s.at("k_steps") < 4) {
    return "many small GM copies: raise k_steps so each copy is larger and pays its start once";
  }
  if (p.l1_hit_rate < 0.9) {
    return "operands are re-fetched often: raise tile sizes (tile_m/tile_n or tile_h/tile_w) "
           "to reuse each loaded block more";
  }
  return "bandwidth-bound: try tile_order 2 (swizzled) for L2 reuse; little else to gain";
}

std::string compute_hint(const Profile& p, const Schedule& s) {
  if (p.cube_utilisation > 0.7) return "compute-bound near peak: little left to gain";
  if (s.has("tile_m") || s.has("tile_h")) {
    return "cube busy but under-used: check for padding (tiles not a multiple of the matrix unit, cube_m x cube_n) and "
           "for "
           "idle cores in the last wave (smaller tiles give every core work)";
  }
  return "vector-bound: larger tiles amortise per-instruction overhead";
}

}  // namespace

Analysis analyze(const Measurement& m, const Schedule& s) {
  if (!m.ok() || m.time_us <= 0) {
    throw Error(ErrorKind::internal, "analyze: needs an ok measurement");
  }
  const Profile& p = m.profile;
  const double total = p.compute_us + p.dma_us + p.sync_wait_us + p.launch_us;
  Analysis a;
  a.compute_share = p.compute_us / total;
  a.dma_share = p.dma_us / total;
  a.sync_share = p.sync_wait_us / total;
  a.launch_share = p.launch_us / total;
  const double top = std::max({a.compute_share, a.dma_share, a.sync_share, a.launch_share});
  if (top == a.launch_share) {
    a.bottleneck = "launch";
    a.hint = p.kernels > 1 ? "launch-bound with " + std::to_string(p.kernels) +
                                 " kernels: raise fusion_level to fuse the epilogue"
                           : "launch-bound: the op is too small for the device; fuse it "
                             "into its neighbours";
  } else if (top == a.dma_share) {
    a.bottleneck = "dma";
    a.hint = "DMA-bound: " + dma_hint(p, s);
  } else if (top == a.sync_share) {
    a.bottleneck = "sync-wait";
    a.hint = "pipeline stalls on buffer flags: raise async_copy_depth or balance the stages";
  } else {
    a.bottleneck = "compute";
    a.hint = compute_hint(p, s);
  }
  if (p.kernels > 1 && a.bottleneck != "launch") {
    a.hint += "; " + std::to_string(p.kernels - 1) + " epilogue op(s) run unfused: raise fusion_level";
  }
  return a;
}

}  // namespace atvoss::simulator
