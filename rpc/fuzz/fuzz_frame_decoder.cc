// libFuzzer entry for the untrusted-input decoders: arbitrary bytes are fed to a frame
// decoder in two uneven pieces (split headers and split payloads), and parsed as JSON
// text by parse_json_bounded. Any outcome but a crash, a sanitizer report or an exception
// other than atvoss::Error is a finding. Built and run briefly by ctest where clang++ with
// libFuzzer is installed (rpc/CMakeLists.txt, tests/rpc/CMakeLists.txt); by hand:
//   build/bin/fuzz_frame_decoder -max_len=70000 /tmp/corpus rpc/fuzz/corpus
// Seeds: rpc/fuzz/corpus (scripts/make_fuzz_corpus.py writes them).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.hpp"
#include "rpc/frame.hpp"
#include "rpc/internal/input_bounds.hpp"

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
  try {
    atvoss::rpc::parse_json_bounded(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const atvoss::Error&) {
  }
  return 0;
}
