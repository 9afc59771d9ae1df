// Map: PackedWeights::pack looks up the kernel's packing symbols and runs its packing once.
#include "host/packed_weights.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include "core/error.hpp"

namespace atvoss::host {

void PackedWeights::Free::operator()(void* p) const { std::free(p); }

PackedWeights PackedWeights::pack(void* handle, const AtvossArgs& args) {
  PackedWeights out;
  const auto pack_fn = reinterpret_cast<PackWeightsFn>(::dlsym(handle, kPackWeightsSymbol));
  const auto* bytes = static_cast<const long*>(::dlsym(handle, kPackedWeightBytesSymbol));
  if (!pack_fn || !bytes || *bytes == 0) return out;  // 0: this schedule reads its weights in place
  if (*bytes < 0)
    throw Error(ErrorKind::internal, "kernel packs its weights into " + std::to_string(*bytes) + " bytes");
  constexpr std::size_t kAlign = 64;  // a cache line and a zmm load
  const std::size_t size = (std::size_t(*bytes) + kAlign - 1) / kAlign * kAlign;
  out.buffer_.reset(std::aligned_alloc(kAlign, size));
  if (!out.buffer_)
    throw Error(ErrorKind::internal, "no memory for " + std::to_string(size) + " bytes of packed weights");
  out.bytes_ = size;
  pack_fn(&args, out.buffer_.get());
  return out;
}

}  // namespace atvoss::host
