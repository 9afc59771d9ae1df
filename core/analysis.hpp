// Analysis: one measurement read the way a performance engineer would: which resource bounds
// the kernel and what to change in its schedule about it. Each backend reads its own
// measurements (backend/backend.hpp Backend::analyze): the simulator from its profile's
// breakdown (simulator/analysis.hpp), the host from the share of the CPU's peak it reached
// (host/analysis.hpp). Callers ask the backend and never which backend they hold.
#pragma once

#include <string>

namespace atvoss {

struct Analysis {
  // Shares of time_us; all 0 where the backend measures no breakdown (the host).
  double compute_share = 0, dma_share = 0, sync_share = 0, launch_share = 0;
  std::string bottleneck;  // the simulator: "compute", "dma", "sync-wait" or "launch"; the host:
                           // "compute" or "memory"; "unknown" where a backend reads no profile
  std::string hint;        // what to change in the schedule, in words
};

}  // namespace atvoss
