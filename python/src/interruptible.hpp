// Interruptible: C++ work that Ctrl-C stops within a fraction of a second. Python handles
// signals only on its main thread and only when that thread runs Python, so the work runs
// on a thread of its own while the calling thread waits with the GIL released and, every
// 100 ms, takes it to let a pending signal through (PyErr_CheckSignals). On a signal
// `interrupt` runs (it raises a cancel flag, core/cancel.hpp: queued measurements are
// skipped, host children killed; or stops a farm worker) and the work is waited for; it
// ends within one poll of what it was measuring.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "bindings.hpp"

namespace atvoss::python {

// Runs work and returns false, or true if a signal's exception (KeyboardInterrupt) is now
// pending in Python and work was stopped through `interrupt` (it has returned). work's
// own exception is rethrown here when no signal came. Called from a thread that is not
// the main one, it never sees a signal, as in Python itself.
// REQUIRES: the GIL is held.
bool run_interruptible(const std::function<void()>& work, const std::function<void()>& interrupt);

// The interrupt that raises cancel.
std::function<void()> raising(const std::shared_ptr<std::atomic<bool>>& cancel);

}  // namespace atvoss::python
