// KernelCache: the loaded kernel of each (workload, schedule) in this process. The source comes
// from the code generator (host/codegen.hpp) and is built through host::build_all, whose
// compile cache (<cache dir>/kernels, keyed by sha256 of source + compiler + flags) already
// holds every kernel the tuner measured on this machine: such a kernel loads with no compile.
// The shared object is dlopen'ed here, in the calling process: the runtime is the kernel's
// consumer (the tuner, which runs untrusted candidates, keeps them in child processes).
// Thread-safe: concurrent first uses of one kernel build and load it once; a build that failed
// fails the same way on every later use without compiling again.
#pragma once

#include <cstddef>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/schedule.hpp"
#include "core/workload.hpp"
#include "host/builder.hpp"
#include "host/kernel_abi.hpp"
#include "host/machine.hpp"
#include "host/packed_weights.hpp"

namespace atvoss::runtime {

class LoadedKernel {
 public:
  LoadedKernel(void* handle, host::KernelFn fn, std::string so_path, double compile_us);
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;

  // Runs the kernel. Concurrent calls of one kernel run in parallel: a generated kernel keeps
  // its packing buffers per calling thread (host/vector_code.hpp's Scratch).
  void call(const host::AtvossArgs& args) const { fn_(&args); }
  // args' weights packed by this kernel (host/packed_weights.hpp); empty when it packs none.
  host::PackedWeights pack_weights(const host::AtvossArgs& args) const {
    return host::PackedWeights::pack(handle_, args);
  }
  const std::string& so_path() const { return so_path_; }
  double compile_us() const { return compile_us_; }  // 0 when the compile cache had it

 private:
  void* handle_;
  host::KernelFn fn_;
  std::string so_path_;
  double compile_us_;
};

class KernelCache {
 public:
  explicit KernelCache(host::BuildOptions options);

  // REQUIRES: host::space_for(w, machine).check(s).ok. internal error naming the workload if
  // the generated source does not compile; io error if the shared object does not load.
  const LoadedKernel& get(const Workload& w, const Schedule& s, const host::MachineInfo& machine);
  std::size_t size() const;  // kernels requested so far (loaded or failed)

 private:
  std::shared_ptr<const LoadedKernel> load(const Workload& w, const Schedule& s,
                                           const host::MachineInfo& machine) const;

  host::BuildOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_future<std::shared_ptr<const LoadedKernel>>> kernels_;
};

}  // namespace atvoss::runtime
