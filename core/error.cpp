#include "core/error.hpp"

namespace atvoss {

std::string_view to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::bad_input:
      return "bad_input";
    case ErrorKind::not_found:
      return "not_found";
    case ErrorKind::io:
      return "io";
    case ErrorKind::corrupt:
      return "corrupt";
    case ErrorKind::protocol:
      return "protocol";
    case ErrorKind::internal:
      return "internal";
  }
  return "internal";
}

void throw_bad_input(const std::string& what) { throw Error(ErrorKind::bad_input, what); }

// A damaged or foreign file that the user named (a truncated database, a table with a bad
// checksum) is input for the user to fix, so it exits 2 like any other bad input.
int exit_code_for(const Error& e) noexcept { return e.is_bad_input() || e.kind() == ErrorKind::corrupt ? 2 : 1; }

}  // namespace atvoss
