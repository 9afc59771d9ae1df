// How much of a kernel's re-read traffic a cache serves, by reuse distance (the bytes touched
// between two uses of a byte), as an LRU cache would: every re-read hits while the distance
// fits, and hits fall off linearly to none at twice the capacity, so the landscape has a
// slope, not a cliff. The simulator's L2 (simulator/internal/transfer.hpp) and the graph run's
// L2 shared by concurrent kernels (execution/scheduler.hpp) both read this one definition.
#pragma once

#include <algorithm>

namespace atvoss {

// Fraction of re-reads at reuse distance distance_bytes that a cache of capacity_bytes serves.
inline double cache_hit_fraction(double capacity_bytes, double distance_bytes) {
  if (capacity_bytes <= 0) return 0;
  if (distance_bytes <= capacity_bytes) return 1;
  return std::clamp(2.0 - distance_bytes / capacity_bytes, 0.0, 1.0);
}

}  // namespace atvoss
