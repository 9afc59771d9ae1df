// AdmissionGate: the places held by connections that have not yet proved the token (the
// farm's login, the HTTP endpoint's first request header). A slow or hostile peer must
// not keep an authorised one out (docs/protocol.md, "Connections waiting to log in"): when the
// places are full, overall or for one address, the oldest waiting connection is evicted
// rather than the new one refused. A peer that sends its login or header at once is
// therefore always served, however many idle connections others hold open, and one
// address holds at most max_per_address places.
// Threading: thread-safe; evict callbacks run on the caller's thread after the lock is
// released, so they must only post work to the evicted connection's own executor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace atvoss::rpc {

struct AdmissionLimits {
  std::size_t max_waiting = 64;      // connections that have not proved the token, overall
  std::size_t max_per_address = 16;  // of those, from one peer address
};

class AdmissionGate {
 public:
  using Evict = std::function<void()>;
  // Error(bad_input) if a limit is 0.
  explicit AdmissionGate(AdmissionLimits limits);

  // Registers a waiting connection from address and returns its ticket. When address
  // already holds max_per_address places its oldest waiting connection is evicted; else,
  // when all places are taken, the oldest overall is.
  std::uint64_t admit(const std::string& address, Evict evict);
  // The connection proved the token and leaves the waiting places. False if it was
  // evicted first (the caller closes it).
  bool pass(std::uint64_t ticket);
  // The connection ended while waiting; nothing if it had passed or been evicted.
  void leave(std::uint64_t ticket);

  std::size_t waiting() const;
  std::uint64_t evictions() const;

 private:
  struct Waiting {
    std::string address;
    Evict evict;
  };
  // REQUIRES: mu_ held. Removes the entry at it and returns its callback.
  Evict take(std::map<std::uint64_t, Waiting>::iterator it);

  AdmissionLimits limits_;
  mutable std::mutex mu_;
  std::uint64_t next_ticket_ = 1;
  std::uint64_t evictions_ = 0;
  std::map<std::uint64_t, Waiting> waiting_;  // by ticket: oldest first
  std::unordered_map<std::string, std::size_t> per_address_;
};

}  // namespace atvoss::rpc
