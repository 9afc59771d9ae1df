// Cancel: a flag a caller raises to stop measurements in flight, e.g. Ctrl-C in the Python
// package. Whoever measures polls it: queued items are answered `error` (an infrastructure
// status, never stored, so a resumed run measures them), and host children (the compiler,
// the kernel runner) are killed within one poll. Shared, because a timed-out measurement
// may outlive the call that started it (backend/measure_pool.hpp).
#pragma once

#include <atomic>
#include <memory>

namespace atvoss {

using CancelFlag = std::shared_ptr<const std::atomic<bool>>;

inline bool cancelled(const CancelFlag& flag) { return flag && flag->load(std::memory_order_relaxed); }

// The message of an item answered `error` because its caller cancelled.
inline constexpr const char* kCancelledMessage = "cancelled by the caller";

}  // namespace atvoss
