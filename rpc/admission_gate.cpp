// AdmissionGate: eviction of the oldest waiting connection (rpc/internal/admission_gate.hpp).
#include "rpc/internal/admission_gate.hpp"

#include <utility>

#include "core/error.hpp"

namespace atvoss::rpc {

AdmissionGate::AdmissionGate(AdmissionLimits limits) : limits_(limits) {
  if (limits_.max_waiting == 0) throw_bad_input("admission limits: max_waiting must be at least 1");
  if (limits_.max_per_address == 0) throw_bad_input("admission limits: max_per_address must be at least 1");
}

AdmissionGate::Evict AdmissionGate::take(std::map<std::uint64_t, Waiting>::iterator it) {
  Evict evict = std::move(it->second.evict);
  const auto count = per_address_.find(it->second.address);
  if (--count->second == 0) per_address_.erase(count);
  waiting_.erase(it);
  return evict;
}

std::uint64_t AdmissionGate::admit(const std::string& address, Evict evict) {
  Evict evicted;
  std::uint64_t ticket = 0;
  {
    const std::lock_guard lock(mu_);
    const auto count = per_address_.find(address);
    if (count != per_address_.end() && count->second >= limits_.max_per_address) {
      for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
        if (it->second.address == address) {
          evicted = take(it);
          break;
        }
      }
    } else if (waiting_.size() >= limits_.max_waiting) {
      evicted = take(waiting_.begin());
    }
    if (evicted) ++evictions_;
    ticket = next_ticket_++;
    waiting_.emplace(ticket, Waiting{address, std::move(evict)});
    ++per_address_[address];
  }
  if (evicted) evicted();
  return ticket;
}

bool AdmissionGate::pass(std::uint64_t ticket) {
  const std::lock_guard lock(mu_);
  const auto it = waiting_.find(ticket);
  if (it == waiting_.end()) return false;
  take(it);
  return true;
}

void AdmissionGate::leave(std::uint64_t ticket) {
  const std::lock_guard lock(mu_);
  const auto it = waiting_.find(ticket);
  if (it != waiting_.end()) take(it);
}

std::size_t AdmissionGate::waiting() const {
  const std::lock_guard lock(mu_);
  return waiting_.size();
}

std::uint64_t AdmissionGate::evictions() const {
  const std::lock_guard lock(mu_);
  return evictions_;
}

}  // namespace atvoss::rpc
