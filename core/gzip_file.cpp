#include "core/gzip_file.hpp"

#include <zlib.h>

#include <memory>

#include <filesystem>

#include "core/error.hpp"
#include "core/user_paths.hpp"

namespace atvoss {
namespace {
struct GzClose {
  void operator()(gzFile_s* f) const noexcept { gzclose(f); }
};
}  // namespace

std::string read_maybe_gzip(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) require_input_file(path, "file");  // gzopen blocks on a FIFO
  std::unique_ptr<gzFile_s, GzClose> f(gzopen(path.c_str(), "rb"));
  if (!f) throw Error(ErrorKind::io, "cannot open '" + path + "'");
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const int n = gzread(f.get(), buf, sizeof buf);
    if (n < 0) {
      int code = 0;
      throw Error(ErrorKind::io, "cannot read '" + path + "': " + gzerror(f.get(), &code));
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > kMaxInputFileBytes) {
      throw_bad_input("'" + path + "' decompresses past the limit of " + std::to_string(kMaxInputFileBytes) + " bytes");
    }
  }
  return out;
}

}  // namespace atvoss
