#include "host/core_pool.hpp"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <utility>

#include "core/error.hpp"

namespace atvoss::host {

CorePool::CorePool(std::vector<int> cpus) : cpus_(std::move(cpus)), leased_(cpus_.size(), false) {
  if (cpus_.empty()) throw_bad_input("host: a core pool needs at least one core");
}

CorePool::Lease::Lease(Lease&& o) noexcept : pool_(std::exchange(o.pool_, nullptr)), cpus_(std::move(o.cpus_)) {}

CorePool::Lease::~Lease() {
  if (pool_) pool_->give_back(cpus_);
}

std::size_t CorePool::wanted(int n) const { return std::clamp<std::size_t>(n < 1 ? 1 : n, 1, cpus_.size()); }

std::size_t CorePool::free_locked() const {
  return static_cast<std::size_t>(std::count(leased_.begin(), leased_.end(), false));
}

std::vector<int> CorePool::take_locked(std::size_t n) {
  std::vector<int> taken;
  for (std::size_t i = 0; i < cpus_.size() && taken.size() < n; ++i) {
    if (leased_[i]) continue;
    leased_[i] = true;
    taken.push_back(cpus_[i]);
  }
  return taken;
}

CorePool::Lease CorePool::acquire(int n) {
  const std::size_t k = wanted(n);
  std::unique_lock lock(mu_);
  freed_.wait(lock, [&] { return free_locked() >= k; });
  return Lease(this, take_locked(k));
}

std::optional<CorePool::Lease> CorePool::try_acquire(int n) {
  const std::size_t k = wanted(n);
  const std::lock_guard lock(mu_);
  if (free_locked() < k) return std::nullopt;
  return Lease(this, take_locked(k));
}

void CorePool::give_back(const std::vector<int>& cpus) {
  {
    const std::lock_guard lock(mu_);
    for (int cpu : cpus) {
      const auto at = std::find(cpus_.begin(), cpus_.end(), cpu);
      leased_[static_cast<std::size_t>(at - cpus_.begin())] = false;
    }
  }
  freed_.notify_all();  // a waiter for several cores may be the one now satisfied
}

namespace {

// The first CPU of "0-1", "0,4" or "3": the core's representative; -1 if unreadable.
int first_sibling(const std::string& cpu_sys, int cpu) {
  std::ifstream f(cpu_sys + "/cpu" + std::to_string(cpu) + "/topology/thread_siblings_list");
  int first = -1;
  if (f >> first) return first;
  return -1;
}

}  // namespace

std::vector<int> timing_cpus(const MachineInfo& m, const std::string& cpu_sys) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  std::set<int> cores;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = CPU_SETSIZE - 1; c >= 0 && static_cast<int>(out.size()) < m.physical_cores; --c) {
      if (!CPU_ISSET(c, &set)) continue;
      const int sibling = first_sibling(cpu_sys, c);
      if (cores.insert(sibling < 0 ? c : sibling).second) out.push_back(c);
    }
  }
  if (out.empty()) out.push_back(0);
  return out;
}

CorePool& kernel_cores() {
  static CorePool pool(timing_cpus(this_machine()));
  return pool;
}

}  // namespace atvoss::host
