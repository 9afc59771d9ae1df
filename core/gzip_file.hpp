// Reading a file that may or may not be gzip-compressed (Kernel Tuner caches ship as
// .json.gz and .json): zlib's gzread passes an uncompressed file through unchanged, so one
// reader serves both.
#pragma once

#include <string>

namespace atvoss {

// The whole file, inflated if it is gzip. io error naming the path if it cannot be read.
std::string read_maybe_gzip(const std::string& path);

}  // namespace atvoss
