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

}  // namespace atvoss
