// CallDeadline: a bound on one call into user Python code (a search policy's propose, a
// backend's measure): a call that never returns would block tune for good, and Ctrl-C would
// not reach it, since Python runs signal handlers on its main thread only. Past the limit,
// or once the caller's cancel flag rises (Ctrl-C, core/cancel.hpp), a watchdog raises
// TimeoutError in the calling thread (PyThreadState_SetAsyncExc), which Python delivers at
// its next bytecode; a call blocked inside C (a sleep, a lock) sees it only when it comes
// back.
// REQUIRES: constructed and destroyed under the GIL, on the thread making the call.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "bindings.hpp"
#include "core/cancel.hpp"

namespace atvoss::python {

class CallDeadline {
 public:
  enum class Fired { no, limit, cancel };

  // limit: none for no bound; cancel: polled every 50 ms while the call runs.
  CallDeadline(std::optional<std::chrono::duration<double>> limit, CancelFlag cancel = {});
  ~CallDeadline();
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;

  // Why the watchdog raised TimeoutError, if it did.
  Fired fired();

 private:
  void watch(std::optional<std::chrono::duration<double>> limit, const CancelFlag& cancel);

  unsigned long thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  Fired fired_ = Fired::no;
  std::thread watchdog_;
};

// The call_timeout_s attribute of a policy or backend object (seconds; None: no bound).
// REQUIRES: the GIL.
std::optional<std::chrono::duration<double>> call_timeout(const py::object& instance);

}  // namespace atvoss::python
