// User-named paths: the checks a tool makes before it reads or writes a file the user
// named, so that a missing file, a directory where a file belongs or a missing parent
// directory is bad input (exit 2) with a message naming the flag or field and the path,
// never a stray io error or a parse error about an empty file. Nothing here creates a
// directory: the user says where output goes, and a missing directory is theirs to make.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace atvoss {

// bad_input unless path names an existing regular file (symlinks followed). A FIFO or a
// device would block a tool for good or feed it without end. `what` names the flag or field,
// e.g. "--workload" or "import".
void require_input_file(const std::string& path, std::string_view what);

// The largest file atvoss reads whole into memory: 1 GiB (docs/architecture.md, "Inputs").
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{1} << 30;

// The content of the regular file at path: io error if it is absent or cannot be read;
// bad_input if it is a directory, a FIFO, a device (require_input_file) or larger than max_bytes.
std::string read_input_file(const std::string& path, std::string_view what,
                            std::uintmax_t max_bytes = kMaxInputFileBytes);

// bad_input if path is a directory, or if its parent directory does not exist or is not
// a directory. The file itself may or may not exist.
void require_output_file(const std::string& path, std::string_view what);

// As require_output_file, for an output that replaces whatever is at path: bad_input too
// if something other than a regular file is there (a symlink, a device node, a FIFO, a
// socket), which replacing would destroy or redirect. "-" (standard output) passes.
void require_replaceable_file(const std::string& path, std::string_view what);

}  // namespace atvoss
