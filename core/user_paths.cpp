#include "core/user_paths.hpp"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "core/error.hpp"

namespace atvoss {
namespace fs = std::filesystem;

namespace {

// What a non-regular entry is, for messages: "a FIFO", "a device node", ...
const char* kind_of(fs::file_type type) {
  switch (type) {
    case fs::file_type::symlink:
      return "a symbolic link";
    case fs::file_type::character:
    case fs::file_type::block:
      return "a device node";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

}  // namespace

void require_input_file(const std::string& path, std::string_view what) {
  const std::string where = std::string(what) + ": '" + path + "'";
  if (path.empty()) throw_bad_input(std::string(what) + ": the path is empty");
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) throw_bad_input(where + " does not exist");
  if (st.type() == fs::file_type::directory) throw_bad_input(where + " is a directory, expected a file");
  if (st.type() != fs::file_type::regular)
    throw_bad_input(where + " is " + kind_of(st.type()) + ", expected a regular file");
}

std::string read_input_file(const std::string& path, std::string_view what, std::uintmax_t max_bytes) {
  const std::string where = std::string(what) + ": '" + path + "'";
  std::error_code ec;
  if (!path.empty() && fs::status(path, ec).type() == fs::file_type::not_found) {
    throw Error(ErrorKind::io, where + ": cannot open (no such file)");
  }
  require_input_file(path, what);
  const auto size = fs::file_size(path, ec);
  if (!ec && size > max_bytes) {
    throw_bad_input(where + " is " + std::to_string(size) + " bytes; the limit is " + std::to_string(max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::io, where + ": cannot open");
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, std::size_t(in.gcount()));
    if (text.size() > max_bytes)
      throw_bad_input(where + " grew past the limit of " + std::to_string(max_bytes) + " bytes");
  }
  if (in.bad()) throw Error(ErrorKind::io, where + ": cannot read");
  return text;
}

void require_output_file(const std::string& path, std::string_view what) {
  const std::string where = std::string(what) + ": '" + path + "'";
  if (path.empty()) throw_bad_input(std::string(what) + ": the path is empty");
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw_bad_input(where + " is a directory, expected a file name");
  const fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return;  // the current directory
  const auto st = fs::status(parent, ec);
  if (st.type() == fs::file_type::not_found) {
    throw_bad_input(where + ": the directory '" + parent.string() + "' does not exist (create it first)");
  }
  if (st.type() != fs::file_type::directory) {
    throw_bad_input(where + ": '" + parent.string() + "' is not a directory");
  }
}

void require_replaceable_file(const std::string& path, std::string_view what) {
  if (path == "-") return;
  require_output_file(path, what);
  std::error_code ec;
  const auto type = fs::symlink_status(path, ec).type();
  if (type == fs::file_type::not_found || type == fs::file_type::regular) return;
  throw_bad_input(std::string(what) + ": '" + path + "' is " + kind_of(type) +
                  "; only a regular file is replaced (give '-' for standard output)");
}

}  // namespace atvoss
