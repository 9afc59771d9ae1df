// Atomic file replacement: the one way atvoss writes a file that others may read while it
// is written (exported tables, JSON-lines exports, reports, port files). The content goes
// to a temporary file with a unique name beside the destination, which is fsynced and then
// renamed into place, and the directory is fsynced. A reader sees the old file or the new
// one, never half of one; two writers never share a temporary; after a crash the file is
// whole or absent. The destination is checked first (require_replaceable_file,
// core/user_paths.hpp): a missing directory, a directory in its place, or anything there
// but a regular file (a symlink, a device node, a FIFO) is bad_input, and no directory is
// created. Path "-" writes to standard output instead.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace atvoss {

// Calls write(stream) and puts what it wrote at path. `what` names the flag or command in
// errors. An exception from write (or a failed write, as io) leaves no temporary behind
// and the old file as it was.
void write_file_atomically(const std::string& path, std::string_view what,
                           const std::function<void(std::ostream&)>& write);

}  // namespace atvoss
