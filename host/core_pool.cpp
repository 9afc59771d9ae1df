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

CorePool::Lease::Lease(Lease&& o) noexcept : pool_(std::exchange(o.pool_, nullptr)), cpu_(o.cpu_) {}

CorePool::Lease::~Lease() {
  if (pool_) pool_->give_back(cpu_);
}

int CorePool::take_locked() {
  const auto free = std::find(leased_.begin(), leased_.end(), false);
  *free = true;
  return cpus_[static_cast<std::size_t>(free - leased_.begin())];
}

CorePool::Lease CorePool::acquire() {
  std::unique_lock lock(mu_);
  freed_.wait(lock, [this] { return std::find(leased_.begin(), leased_.end(), false) != leased_.end(); });
  return Lease(this, take_locked());
}

std::optional<CorePool::Lease> CorePool::try_acquire() {
  const std::lock_guard lock(mu_);
  if (std::find(leased_.begin(), leased_.end(), false) == leased_.end()) return std::nullopt;
  return Lease(this, take_locked());
}

void CorePool::give_back(int cpu) {
  {
    const std::lock_guard lock(mu_);
    const auto at = std::find(cpus_.begin(), cpus_.end(), cpu);
    leased_[static_cast<std::size_t>(at - cpus_.begin())] = false;
  }
  freed_.notify_one();
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
