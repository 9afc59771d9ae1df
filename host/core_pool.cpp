#include "host/core_pool.hpp"

#include <algorithm>
#include <utility>

#include "core/error.hpp"
#include "host/pinning.hpp"

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

std::vector<int> timing_cpus(const MachineInfo& m, const std::string& cpu_sys) {
  std::vector<int> allowed = allowed_cpus();
  std::reverse(allowed.begin(), allowed.end());  // highest first: cpu 0 takes the interrupts
  std::vector<int> out = distinct_cores(allowed, cpu_sys);
  if (out.size() > static_cast<std::size_t>(std::max(m.physical_cores, 1))) out.resize(std::max(m.physical_cores, 1));
  if (out.empty()) out.push_back(0);
  return out;
}

CorePool& kernel_cores() {
  static CorePool pool(timing_cpus(this_machine()));
  return pool;
}

}  // namespace atvoss::host
