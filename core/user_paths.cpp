#include "core/user_paths.hpp"

#include <filesystem>
#include <system_error>

#include "core/error.hpp"

namespace atvoss {
namespace fs = std::filesystem;

void require_input_file(const std::string& path, std::string_view what) {
  const std::string where = std::string(what) + ": '" + path + "'";
  if (path.empty()) throw_bad_input(std::string(what) + ": the path is empty");
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) throw_bad_input(where + " does not exist");
  if (st.type() == fs::file_type::directory) throw_bad_input(where + " is a directory, expected a file");
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
  const char* kind = type == fs::file_type::symlink     ? "a symbolic link"
                     : type == fs::file_type::character || type == fs::file_type::block ? "a device node"
                     : type == fs::file_type::fifo      ? "a FIFO"
                     : type == fs::file_type::socket    ? "a socket"
                                                        : "not a regular file";
  throw_bad_input(std::string(what) + ": '" + path + "' is " + kind +
                  "; only a regular file is replaced (give '-' for standard output)");
}

}  // namespace atvoss
