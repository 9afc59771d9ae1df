// libFuzzer entry for the frame decoder: arbitrary bytes, fed in two uneven pieces so
// that split headers and split payloads are exercised. Any outcome but a crash, a
// sanitizer report or an exception other than atvoss::Error is a finding.
// Build: cmake -DCMAKE_CXX_COMPILER=clang++ -DATVOSS_FUZZ=ON ...; run: fuzz_frame_decoder corpus/
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "rpc/frame.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  atvoss::rpc::FrameDecoder decoder(1 << 16);
  const std::size_t split = size == 0 ? 0 : data[0] % (size + 1);
  try {
    decoder.feed(std::span(data, split));
    while (decoder.next()) {
    }
    decoder.feed(std::span(data + split, size - split));
    while (decoder.next()) {
    }
  } catch (const atvoss::Error&) {
    // A rejected stream is the expected outcome for most inputs.
  }
  return 0;
}
