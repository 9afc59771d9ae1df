#include "interruptible.hpp"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace atvoss::python {
namespace {

constexpr std::chrono::milliseconds kSignalPoll{100};

bool signal_pending() {
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

}  // namespace

std::function<void()> raising(const std::shared_ptr<std::atomic<bool>>& cancel) {
  return [cancel] { cancel->store(true); };
}

bool run_interruptible(const std::function<void()>& work, const std::function<void()>& interrupt) {
  std::mutex mu;
  std::condition_variable finished;
  bool done = false;
  std::exception_ptr failure;
  bool interrupted = false;
  {
    py::gil_scoped_release release;
    std::thread worker([&] {
      try {
        work();
      } catch (...) {
        failure = std::current_exception();
      }
      const std::lock_guard lock(mu);
      done = true;
      finished.notify_all();
    });
    std::unique_lock lock(mu);
    while (!finished.wait_for(lock, kSignalPoll, [&] { return done; })) {
      if (interrupted) continue;
      lock.unlock();
      interrupted = signal_pending();
      if (interrupted) interrupt();
      lock.lock();
    }
    lock.unlock();
    worker.join();
  }
  if (interrupted) return true;
  if (failure) std::rethrow_exception(failure);
  return false;
}

}  // namespace atvoss::python
