// CorePool: the cores timed kernels run on, handed out one kernel thread per physical core
// at a time (a kernel of `threads` threads leases that many cores). Several callers may measure at once (a farm
// worker's slots, docs/host-backend.md "A host farm"); each timed kernel holds a Lease on one core and pins its runner
// there, so two timed kernels never share a core and a third waits until one is free. Compiles take no lease: they run
// in parallel as the builder decides. Threading: acquire() and try_acquire() are thread-safe; a Lease gives its core
// back when destroyed.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "host/machine.hpp"

namespace atvoss::host {

class CorePool {
 public:
  // REQUIRES: cpus non-empty; handed out in this order while free.
  explicit CorePool(std::vector<int> cpus);

  class Lease {
   public:
    Lease(Lease&& o) noexcept;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    int cpu() const { return cpus_.front(); }
    const std::vector<int>& cpus() const { return cpus_; }

   private:
    friend class CorePool;
    Lease(CorePool* pool, std::vector<int> cpus) : pool_(pool), cpus_(std::move(cpus)) {}
    CorePool* pool_;
    std::vector<int> cpus_;
  };

  // n cores (at most size()): blocks until that many are free.
  Lease acquire(int n = 1);
  std::optional<Lease> try_acquire(int n = 1);  // nullopt while fewer than n are free
  std::size_t size() const { return cpus_.size(); }

 private:
  void give_back(const std::vector<int>& cpus);
  std::size_t wanted(int n) const;
  std::size_t free_locked() const;              // REQUIRES: mu_ held
  std::vector<int> take_locked(std::size_t n);  // REQUIRES: mu_ held and n cores free

  const std::vector<int> cpus_;
  std::vector<bool> leased_;
  std::mutex mu_;
  std::condition_variable freed_;
};

// One logical CPU per physical core of this process's CPU affinity set (hyper-threads of a
// core read as one, from <cpu_sys>/cpuN/topology as pinning.hpp reads it), highest first, at
// most m.physical_cores of them; at least one.
std::vector<int> timing_cpus(const MachineInfo& m, const std::string& cpu_sys = MachineRoots{}.cpu_sys);

// The process-wide pool over timing_cpus(this_machine()).
CorePool& kernel_cores();

}  // namespace atvoss::host
