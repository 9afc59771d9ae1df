// eventually(): polls a coordinator's in-process stats until a condition holds (true) or
// the timeout passes (false), so the coordinator tests act and assert on a state of the
// farm instead of after a fixed sleep that a loaded machine may not honour.
#pragma once

#include <chrono>
#include <thread>

#include "core/json.hpp"
#include "rpc/coordinator.hpp"

namespace atvoss::rpc {

template <typename Pred>
bool eventually(const Coordinator& farm, Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  for (auto deadline = std::chrono::steady_clock::now() + timeout; std::chrono::steady_clock::now() < deadline;) {
    if (pred(farm.stats())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace atvoss::rpc
