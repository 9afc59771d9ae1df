#include "call_deadline.hpp"

#include <algorithm>

namespace atvoss::python {

namespace {
constexpr std::chrono::milliseconds kCancelPoll{50};
}

CallDeadline::CallDeadline(std::optional<std::chrono::duration<double>> limit, CancelFlag cancel)
    : thread_(PyThread_get_thread_ident()) {
  if (!limit && !cancel) return;
  watchdog_ = std::thread([this, limit, cancel = std::move(cancel)] { watch(limit, cancel); });
}

void CallDeadline::watch(std::optional<std::chrono::duration<double>> limit, const CancelFlag& cancel) {
  using Seconds = std::chrono::duration<double>;
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return Seconds(std::chrono::steady_clock::now() - start); };
  // Without a cancel flag nothing needs polling: wake for the limit, or once an hour.
  const Seconds poll = cancel ? Seconds(kCancelPoll) : Seconds(3600);
  Fired why = Fired::no;
  {
    std::unique_lock lock(mu_);
    while (!done_ && why == Fired::no) {
      const Seconds wait = limit ? std::min(poll, *limit - elapsed()) : poll;
      if (wait > Seconds(0)) cv_.wait_for(lock, wait);
      if (done_) return;
      if (cancelled(cancel)) {
        why = Fired::cancel;
      } else if (limit && elapsed() >= *limit) {
        why = Fired::limit;
      }
    }
  }
  py::gil_scoped_acquire gil;  // the caller holds the GIL only while it runs Python
  const std::lock_guard lock(mu_);
  if (done_) return;
  PyThreadState_SetAsyncExc(thread_, PyExc_TimeoutError);
  fired_ = why;
}

CallDeadline::~CallDeadline() {
  if (!watchdog_.joinable()) return;
  {
    const std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  {
    py::gil_scoped_release release;  // the watchdog may be waiting for the GIL
    watchdog_.join();
  }
  // An exception raised as the call returned may not have been delivered: drop it.
  if (fired_ != Fired::no) PyThreadState_SetAsyncExc(thread_, nullptr);
}

CallDeadline::Fired CallDeadline::fired() {
  const std::lock_guard lock(mu_);
  return fired_;
}

std::optional<std::chrono::duration<double>> call_timeout(const py::object& instance) {
  const py::object t = py::getattr(instance, "call_timeout_s", py::none());
  if (t.is_none()) return std::nullopt;
  return std::chrono::duration<double>(t.cast<double>());
}

}  // namespace atvoss::python
