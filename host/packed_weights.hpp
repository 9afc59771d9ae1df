// Prepacked weights: a kernel's weights packed once, outside its calls, by the kernel's own
// atvoss_pack_weights (kernel_abi.hpp), as an inference runtime packs constant weights at
// load. The timing protocol packs them before it times such a kernel, and the side-by-side
// benchmarks do the same, so a kernel is timed as oneDNN is (its weights reordered outside).
#pragma once

#include <cstddef>
#include <memory>

#include "host/kernel_abi.hpp"

namespace atvoss::host {

class PackedWeights {
 public:
  // args' weights packed by the kernel loaded at `handle` (dlopen), or an empty buffer when
  // the kernel exports no packing (it packs inside every call).
  static PackedWeights pack(void* handle, const AtvossArgs& args);

  explicit operator bool() const { return bytes_ > 0; }
  const void* data() const { return buffer_.get(); }
  std::size_t bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> buffer_;
  std::size_t bytes_ = 0;
};

}  // namespace atvoss::host
