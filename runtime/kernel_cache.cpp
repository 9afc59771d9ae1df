#include "runtime/kernel_cache.hpp"

#include <dlfcn.h>

#include "core/error.hpp"
#include "host/codegen.hpp"
#include "host/kernel_object.hpp"

namespace atvoss::runtime {

LoadedKernel::LoadedKernel(void* handle, host::KernelFn fn, std::string so_path, double compile_us)
    : handle_(handle), fn_(fn), so_path_(std::move(so_path)), compile_us_(compile_us) {}

LoadedKernel::~LoadedKernel() { ::dlclose(handle_); }

KernelCache::KernelCache(host::BuildOptions options) : options_(std::move(options)) {}

std::shared_ptr<const LoadedKernel> KernelCache::load(const Workload& w, const Schedule& s,
                                                      const host::MachineInfo& machine) const {
  const std::string source = host::generate_source(w, s, machine);
  const host::BuildResult built = host::build_all({source}, options_).at(0);
  if (built.status != Status::ok) {
    throw Error(ErrorKind::internal, "runtime: the kernel of " + w.label() + " with schedule " + s.to_json().dump() +
                                         " did not compile: " + built.message);
  }
  // The builder hands out only an object whose digest matches, and whole (host/builder.hpp);
  // open_kernel_object checks again what the call depends on, so a damaged object is an
  // error here, never a SIGBUS or a kernel of another shape.
  host::KernelObject k;
  try {
    k = host::open_kernel_object(built.so_path, w, "runtime: kernel " + built.so_path);
  } catch (const Error& e) {
    throw Error(ErrorKind::io, e.what());
  }
  return std::make_shared<const LoadedKernel>(k.handle, k.fn, built.so_path, built.cached ? 0.0 : built.compile_us);
}

const LoadedKernel& KernelCache::get(const Workload& w, const Schedule& s, const host::MachineInfo& machine) {
  const std::string key = w.key() + "/" + s.key();
  std::promise<std::shared_ptr<const LoadedKernel>> promise;
  std::shared_future<std::shared_ptr<const LoadedKernel>> future;
  bool first = false;
  {
    std::lock_guard lock(mu_);
    auto it = kernels_.find(key);
    if (it == kernels_.end()) {
      it = kernels_.emplace(key, promise.get_future().share()).first;
      first = true;
    }
    future = it->second;
  }
  if (first) {  // build outside the lock: other kernels stay available meanwhile
    try {
      promise.set_value(load(w, s, machine));
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
  }
  return *future.get();  // the map keeps the kernel alive as long as the cache lives
}

std::size_t KernelCache::size() const {
  std::lock_guard lock(mu_);
  return kernels_.size();
}

}  // namespace atvoss::runtime
